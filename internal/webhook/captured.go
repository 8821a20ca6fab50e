package webhook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// ReadCapturedHeaders reads the headers of a captured delivery: "Name:
// value" lines (GitHub's Recent Deliveries; a line without a colon or
// whose name has a space, such as "Request URL: ...", is skipped), or a
// JSON object of headers, or a Function URL event whose "headers" they are.
func ReadCapturedHeaders(file string) (map[string]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read headers: %w", err)
	}
	out := map[string]string{}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(t, &doc); err != nil {
			return nil, fmt.Errorf("headers %s: not a JSON object: %w", file, err)
		}
		if h, ok := doc["headers"]; ok {
			t = h
		}
		if err := json.Unmarshal(t, &out); err != nil {
			return nil, fmt.Errorf("headers %s: want an object of strings: %w", file, err)
		}
		return out, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.ContainsAny(strings.TrimSpace(name), " \t") {
			continue
		}
		out[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("headers %s: no \"Name: value\" line", file)
	}
	return out, nil
}
