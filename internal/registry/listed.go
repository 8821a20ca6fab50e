package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/knue/syncjob/internal/policy"
)

// Queue and dead-letter keys carry their entry in their metadata, so that
// a listing (1,000 keys a request on Cloudflare) reads them without one
// request per key; the values stay as they are. Metadata is at most 1,024
// bytes: a long error message is cut there and the entry marked cut, and a
// reader that needs the exact entry reads the value of a cut entry (or of one
// an older version wrote without these fields) with a bulk get (100 keys a
// request).

// queueMetadata is the metadata of a queue key.
type queueMetadata struct {
	SHA        string `json:"sha"`
	RetryCount int    `json:"retryCount"`
	Failed     bool   `json:"failed,omitempty"`
	// The rest of the entry; Operation and CreatedAt absent mean the key
	// was written before the metadata carried the entry.
	Operation    string  `json:"operation,omitempty"`
	CreatedAt    string  `json:"createdAt,omitempty"`
	ErrorMessage *string `json:"errorMessage,omitempty"`
	FileNo       string  `json:"fileNo,omitempty"`
	AttemptID    string  `json:"attemptId,omitempty"`
	// Cut says ErrorMessage (or a dead letter's Reason) was shortened to
	// fit: the value holds it whole.
	Cut bool `json:"cut,omitempty"`
}

// deadLetterMetadata is the metadata of a dead-letter key.
type deadLetterMetadata struct {
	queueMetadata
	DeadAt string `json:"deadAt,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// queueMetadataOf is q's metadata, its error message cut to fit.
func queueMetadataOf(q policy.QueueEntry) json.RawMessage {
	return fitMetadata(queueMetadataAt(q), ptrText(q.ErrorMessage), 1)
}

// queueMetadataAt is q's metadata with its error message cut at budget bytes.
func queueMetadataAt(q policy.QueueEntry) func(budget int) any {
	fileNo, cutNo := metadataFileNo(q.FileNo)
	md := queueMetadata{
		SHA: q.SHA, RetryCount: q.RetryCount, Failed: q.ErrorMessage != nil,
		Operation: q.Operation, CreatedAt: q.CreatedAt, ErrorMessage: q.ErrorMessage,
		FileNo: fileNo, AttemptID: q.AttemptID, Cut: cutNo,
	}
	return func(budget int) any {
		if q.ErrorMessage != nil {
			msg, cut := cutText(*q.ErrorMessage, budget)
			md.ErrorMessage, md.Cut = &msg, cut || cutNo
		}
		return md
	}
}

// deadLetterMetadataOf is d's metadata, its texts cut to fit.
func deadLetterMetadataOf(d policy.DeadLetter) json.RawMessage {
	return fitMetadata(deadLetterMetadataAt(d), longer(d.Reason, ptrText(d.ErrorMessage)), 2)
}

// deadLetterMetadataAt is d's metadata with its texts cut at budget/2 bytes.
func deadLetterMetadataAt(d policy.DeadLetter) func(budget int) any {
	return func(budget int) any {
		md := deadLetterMetadata{DeadAt: d.DeadAt}
		var cutMsg, cutReason bool
		md.Reason, cutReason = cutText(d.Reason, budget/2)
		q := d.QueueEntry
		fileNo, cutNo := metadataFileNo(q.FileNo)
		md.queueMetadata = queueMetadata{
			SHA: q.SHA, RetryCount: q.RetryCount, Failed: q.ErrorMessage != nil,
			Operation: q.Operation, CreatedAt: q.CreatedAt,
			FileNo: fileNo, AttemptID: q.AttemptID,
		}
		if q.ErrorMessage != nil {
			msg, cut := cutText(*q.ErrorMessage, budget/2)
			md.ErrorMessage, cutMsg = &msg, cut
		}
		md.Cut = cutMsg || cutReason || cutNo
		return md
	}
}

// maxMetadataFileNo is the longest legacy fileNo the metadata carries. A
// v1 entry's fileNo is copied as it is, and one of some 850 bytes alone
// would take the metadata past its 1,024 bytes (texts are cut, a fileNo
// cannot be): a longer one is left to the value, the entry marked cut.
const maxMetadataFileNo = 256

// metadataFileNo is fileNo as the metadata carries it, and whether it was
// left out.
func metadataFileNo(fileNo string) (string, bool) {
	if len(fileNo) > maxMetadataFileNo || len(MustJSON(fileNo)) > maxMetadataFileNo+2 { // encoded: "\u0001" is six bytes
		return "", true
	}
	return fileNo, false
}

// longer is the longer of a and b.
func longer(a, b string) string {
	if len(b) > len(a) {
		return b
	}
	return a
}

// fitMetadata encodes build(budget) with the largest text budget (starting
// at per times the longest text's length, each text cut at budget/per
// bytes) whose encoding fits policy.MaxMetadataBytes; failing that, the
// encoding with no text at all. A budget at which the longest text alone is
// too long is passed over unencoded: a 14 KB error message took a dozen
// encodings of itself.
func fitMetadata(build func(budget int) any, longest string, per int) json.RawMessage {
	for budget := per * len(longest); budget > 0; budget = budget * 3 / 4 {
		if cut, _ := cutText(longest, budget/per); len(cut) > policy.MaxMetadataBytes {
			continue // encoded, it is no shorter
		}
		if b := MustJSON(build(budget)); len(b) <= policy.MaxMetadataBytes {
			return b
		}
	}
	return MustJSON(build(0))
}

// cutText returns s cut to at most n bytes at a character boundary, and
// whether it was cut.
func cutText(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

func ptrText(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// queueFromMetadata returns the entry a listed queue key's metadata holds
// whole; ok is false when it holds less (cut, or written by an older version).
func queueFromMetadata(it Item, prefix string) (policy.QueueEntry, bool) {
	var md queueMetadata
	if len(it.Metadata) == 0 || decodeObject(it.Metadata, &md) != nil {
		return policy.QueueEntry{}, false
	}
	return md.entry(strings.TrimPrefix(it.Key, prefix))
}

func (md queueMetadata) entry(name string) (policy.QueueEntry, bool) {
	if md.Cut || md.Operation == "" || md.CreatedAt == "" || md.SHA == "" || md.Failed != (md.ErrorMessage != nil) {
		return policy.QueueEntry{}, false
	}
	return policy.QueueEntry{
		PolicyName: name, SHA: md.SHA, Operation: md.Operation, RetryCount: md.RetryCount,
		CreatedAt: md.CreatedAt, ErrorMessage: md.ErrorMessage, FileNo: md.FileNo, AttemptID: md.AttemptID,
	}, true
}

// deadLetterFromMetadata is queueFromMetadata for a dead letter.
func deadLetterFromMetadata(it Item) (policy.DeadLetter, bool) {
	var md deadLetterMetadata
	if len(it.Metadata) == 0 || decodeObject(it.Metadata, &md) != nil || md.DeadAt == "" {
		return policy.DeadLetter{}, false
	}
	q, ok := md.entry(strings.TrimPrefix(it.Key, DeadLetterPrefix))
	return policy.DeadLetter{QueueEntry: q, DeadAt: md.DeadAt, Reason: md.Reason}, ok
}

// listed lists prefix and returns, by name, the entries whose metadata holds
// them whole (from), reading the values of the others with bulk gets. Values
// that do not decode are left out and named in a *DecodeError returned with
// the rest; any other error means the read failed and the map is nil.
func listed[T any](ctx context.Context, r *Registry, prefix string, from func(Item) (T, bool)) (map[string]T, error) {
	items, err := r.store.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("registry: read %s: %w", what(prefix), err)
	}
	out := make(map[string]T, len(items))
	var (
		rest []string
		bad  *DecodeError
	)
	for _, it := range items {
		name := strings.TrimPrefix(it.Key, prefix)
		if it.Value == nil {
			if v, ok := from(it); ok {
				out[name] = v
			} else {
				rest = append(rest, it.Key)
			}
			continue
		}
		var v T
		if err := decodeObject(it.Value, &v); err != nil {
			bad = bad.add(it.Key, err)
			continue
		}
		out[name] = v
	}
	return decodeRest(ctx, r, prefix, rest, out, bad)
}

// decodeRest bulk-reads keys (listed without a usable metadata) into out.
func decodeRest[T any](ctx context.Context, r *Registry, prefix string, keys []string, out map[string]T, bad *DecodeError) (map[string]T, error) {
	for start := 0; start < len(keys); start += maxManyKeys {
		got, err := r.getMany(ctx, keys[start:min(start+maxManyKeys, len(keys))])
		if err != nil {
			return nil, fmt.Errorf("registry: read %s: %w", what(prefix), err)
		}
		for _, k := range keys[start:min(start+maxManyKeys, len(keys))] {
			raw, ok := got[k]
			if !ok {
				continue // gone since it was listed
			}
			var v T
			if err := decodeObject(raw, &v); err != nil {
				bad = bad.add(k, err)
				continue
			}
			out[strings.TrimPrefix(k, prefix)] = v
		}
	}
	if bad != nil {
		return out, bad
	}
	return out, nil
}
