package cloudflare

import (
	"strings"
	"testing"
	"unsafe"
)

// A cursor is kept as a copy, not as the slice of its page's response the
// API client decoded it as (which would keep every page's body).
func TestCursors_KeepACopy(t *testing.T) {
	t.Parallel()
	body := `{"result_info":{"cursor":"6Ck1la0VxJ0djhidm1MdX2FyD"}}` // as the client holds a page
	given := body[strings.Index(body, "6Ck"):strings.LastIndex(body, `"`)]
	seen := cursors{}
	if seen.repeated(given) {
		t.Fatal("a first cursor is not repeated")
	}
	if !seen.repeated(strings.Clone(given)) {
		t.Error("the same cursor again is not seen as repeated")
	}
	b := uintptr(unsafe.Pointer(unsafe.StringData(body)))
	for kept := range seen {
		if p := uintptr(unsafe.Pointer(unsafe.StringData(kept))); p >= b && p < b+uintptr(len(body)) {
			t.Errorf("cursor %q is kept as a slice of its page's response: the page stays held", kept)
		}
	}
}
