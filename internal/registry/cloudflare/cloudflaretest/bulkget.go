package cloudflaretest

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// bulkGetRequest is the body of POST .../bulk/get.
type bulkGetRequest struct {
	Keys         []string `json:"keys"`
	Type         string   `json:"type"` // "text" (the default) or "json"
	WithMetadata bool     `json:"withMetadata"`
}

// bulkGetValue is one value of a bulk get with metadata.
type bulkGetValue struct {
	Value      any             `json:"value"`
	Metadata   json.RawMessage `json:"metadata"`
	Expiration int64           `json:"expiration,omitempty"`
}

// bulkGet serves Cloudflare's "get multiple key-value pairs": up to 100
// keys, answered as {"values": {key: value}}, a key without a live value
// mapped to null. Values are text (KV's bulk read is for text values; bytes
// that are not UTF-8 come back replaced, as JSON strings carry them), or
// parsed JSON with "type": "json"; with "withMetadata": true each value is
// {"value", "metadata", "expiration"}.
func (f *Fake) bulkGet(w http.ResponseWriter, r *http.Request) {
	var req bulkGetRequest
	if !f.readBulk(w, r, &req) {
		return
	}
	switch {
	case len(req.Keys) == 0 || len(req.Keys) > MaxBulkGetKeys:
		fail(w, http.StatusBadRequest, CodeBadRequest, "keys must hold 1 to %d keys, not %d", MaxBulkGetKeys, len(req.Keys))
		return
	case req.Type != "" && req.Type != "text" && req.Type != "json":
		fail(w, http.StatusBadRequest, CodeBadRequest, "type must be text or json, not %q", req.Type)
		return
	}
	for _, k := range req.Keys {
		if code, msg := checkKey(k); msg != "" {
			fail(w, http.StatusBadRequest, code, "%s", msg)
			return
		}
	}
	values, ok := f.bulkValues(w, req)
	if ok {
		writeEnvelope(w, http.StatusOK, map[string]any{"values": values}, nil)
	}
}

// bulkValues looks the keys up, answering the error itself when a value
// is not the JSON that "type": "json" asks for.
func (f *Fake) bulkValues(w http.ResponseWriter, req bulkGetRequest) (map[string]any, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	values := make(map[string]any, len(req.Keys))
	for _, k := range req.Keys {
		e, live := f.live(k)
		if !live {
			values[k] = nil
			continue
		}
		var v any = string(e.value)
		if req.Type == "json" {
			if !json.Valid(e.value) {
				fail(w, http.StatusBadRequest, CodeBadRequest, "value of %s is not JSON", strconv.Quote(k))
				return nil, false
			}
			v = json.RawMessage(e.value)
		}
		if req.WithMetadata {
			bv := bulkGetValue{Value: v, Metadata: e.metadata}
			if bv.Metadata == nil {
				bv.Metadata = json.RawMessage("null")
			}
			if !e.exp.IsZero() {
				bv.Expiration = e.exp.Unix()
			}
			v = bv
		}
		values[k] = v
	}
	return values, true
}
