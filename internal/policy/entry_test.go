package policy_test

import (
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
)

// TestEntry_Compact: a full run holds every entry of the registry in a
// map; the v1 fields almost no entry has take a pointer's eight bytes, not
// four strings' 64 (docs/bench.md, "A full run's memory").
func TestEntry_Compact(t *testing.T) {
	t.Parallel()
	if n := unsafe.Sizeof(policy.Entry{}); n > 120 {
		t.Errorf("policy.Entry is %d bytes, want at most 120", n)
	}
}

// TestEntry_JSON_AsWritten: an entry writes and reads the JSON it always
// has: the v1 fields in their place between path and contentEtag, absent
// when it carries none.
func TestEntry_JSON_AsWritten(t *testing.T) {
	t.Parallel()
	plain := policy.Entry{PolicyName: "가", Title: "T", Status: policy.StatusActive, LastUpdated: "t1", SHA: "s1", Path: "a/가.md", ContentETag: "e1"}
	carried := plain
	carried.SetV1(policy.Legacy{FileNo: "7", PreviewURL: "p", DownloadURL: "d", LegacyUntil: "u"})
	for _, c := range []struct {
		entry policy.Entry
		json  string
	}{
		{plain, `{"policyName":"가","title":"T","status":"active","lastUpdated":"t1","sha":"s1","path":"a/가.md","contentEtag":"e1"}`},
		{carried, `{"policyName":"가","title":"T","status":"active","lastUpdated":"t1","sha":"s1","path":"a/가.md","fileNo":"7","previewUrl":"p","downloadUrl":"d","legacyUntil":"u","contentEtag":"e1"}`},
		{policy.Entry{Title: "v1", Legacy: &policy.Legacy{FileNo: "9"}}, `{"policyName":"","title":"v1","status":"","lastUpdated":"","sha":"","path":"","fileNo":"9"}`},
	} {
		got, err := json.Marshal(c.entry)
		if err != nil || string(got) != c.json {
			t.Errorf("Marshal = %s, %v; want %s", got, err, c.json)
		}
		var back policy.Entry
		if err := json.Unmarshal([]byte(c.json), &back); err != nil || !cmp.Equal(back, c.entry) {
			t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", c.json, back, err, c.entry)
		}
	}
	if plain.Legacy != nil || plain.HasLegacy() || plain.V1() != (policy.Legacy{}) {
		t.Errorf("an entry without v1 fields = %+v", plain)
	}
}

// TestEntry_SetV1_CopiesKeepTheirs: copies of an entry share its v1
// fields; setting them on one leaves the others as they were, and setting
// none lets them go.
func TestEntry_SetV1_CopiesKeepTheirs(t *testing.T) {
	t.Parallel()
	var e policy.Entry
	e.SetV1(policy.Legacy{FileNo: "1", LegacyUntil: "u"})
	c := e
	c.SetV1(policy.Legacy{FileNo: "2"})
	if e.V1() != (policy.Legacy{FileNo: "1", LegacyUntil: "u"}) || c.V1() != (policy.Legacy{FileNo: "2"}) {
		t.Errorf("e = %+v, c = %+v", e.V1(), c.V1())
	}
	c.SetV1(policy.Legacy{})
	if c.Legacy != nil || c.HasLegacy() || !e.HasLegacy() {
		t.Errorf("after setting none: e = %+v, c = %+v", e.V1(), c.V1())
	}
}
