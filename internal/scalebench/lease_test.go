package scalebench

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// leaseWatch follows the single-writer lease as the program writes it to
// Cloudflare: when each lease write landed and what expiry it stored. A run
// must never write while the stored lease has expired, for another writer
// may then take it; the bench reports how long that lasted.
type leaseWatch struct {
	mu     sync.Mutex
	writes []leaseWrite
}

type leaseWrite struct {
	at       time.Time // when the write reached the proxy
	expires  time.Time // what it stored
	released bool
}

// see reads a bulk write's body for the lease key; the body is left for the
// proxy to pass on. Only small bodies are read: the lease travels alone or
// with the run's record.
func (lw *leaseWatch) see(r *http.Request) {
	if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/bulk") || r.ContentLength > 64<<10 {
		return
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return
	}
	var pairs []struct{ Key, Value string }
	if json.Unmarshal(body, &pairs) != nil {
		return
	}
	for _, p := range pairs {
		if p.Key != registry.LeaseKey {
			continue
		}
		var l registry.Lease
		if json.Unmarshal([]byte(p.Value), &l) != nil {
			continue
		}
		exp, err := time.Parse(policy.TimeLayout, l.ExpiresAt)
		if err != nil {
			continue
		}
		lw.mu.Lock()
		lw.writes = append(lw.writes, leaseWrite{at: time.Now(), expires: exp, released: l.ReleasedAt != ""})
		lw.mu.Unlock()
	}
}

// take returns the lease writes since the last take.
func (lw *leaseWatch) take() []leaseWrite {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	w := lw.writes
	lw.writes = nil
	return w
}

// expiredWhileHeld is how long, between the run's first lease write and
// its release, the lease as last written had expired (expiries are stored
// to the second), and the longest such stretch.
func expiredWhileHeld(writes []leaseWrite) (total, longest time.Duration) {
	if len(writes) < 2 {
		return 0, 0
	}
	var stretch time.Duration // the current one: stretches that touch are one
	var end time.Time
	for i, w := range writes[:len(writes)-1] {
		if w.released {
			break
		}
		from, next := w.expires.Add(time.Second), writes[i+1].at
		if from.Before(w.at) { // it landed already expired
			from = w.at
		}
		if !from.Before(next) {
			continue
		}
		if !from.Equal(end) {
			stretch = 0
		}
		d := next.Sub(from)
		total += d
		stretch += d
		longest = max(longest, stretch)
		end = next
	}
	return total, longest
}

func TestLeaseWatch_ExpiredWhileHeld(t *testing.T) {
	at := func(s int) time.Time {
		return time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC).Add(time.Duration(s) * time.Second)
	}
	// what the 50,000-policy first sync wrote: a 3-minute lease whose
	// renewals waited in Cloudflare's rate window
	writes := []leaseWrite{
		{at: at(0), expires: at(180)},
		{at: at(300), expires: at(240)}, // asked for at 60 s, landed at 300 s
		{at: at(304), expires: at(480)},
		{at: at(600), expires: at(540)},
		{at: at(604), expires: at(780)},
		{at: at(605), expires: at(605), released: true},
	}
	total, longest := expiredWhileHeld(writes)
	if want := (304 - 181 + 604 - 481) * time.Second; total != want || longest != 123*time.Second {
		t.Errorf("expired %s (longest %s), want %s (longest 2m3s)", total, longest, want)
	}
	if total, _ := expiredWhileHeld(writes[4:]); total != 0 {
		t.Errorf("a lease renewed in time: expired %s, want 0", total)
	}
}

func TestLeaseWatch_ReadsLeaseWrites(t *testing.T) {
	lease := registry.Lease{Owner: "run", AcquiredAt: "2026-11-26T04:00:00Z", ExpiresAt: "2026-11-26T04:03:00Z"}
	v, _ := json.Marshal(lease)
	body, _ := json.Marshal([]map[string]string{{"key": "queue:a", "value": "{}"}, {"key": registry.LeaseKey, "value": string(v)}})
	r := httptest.NewRequest(http.MethodPut, "/client/v4/accounts/a/storage/kv/namespaces/n/bulk", bytes.NewReader(body))
	var lw leaseWatch
	lw.see(r)
	got := lw.take()
	if len(got) != 1 || !got[0].expires.Equal(time.Date(2026, 11, 26, 4, 3, 0, 0, time.UTC)) || got[0].released {
		t.Errorf("lease writes %+v, want one expiring at 04:03:00", got)
	}
	if rest, _ := io.ReadAll(r.Body); !bytes.Equal(rest, body) {
		t.Error("the body was not left for the proxy")
	}
}
