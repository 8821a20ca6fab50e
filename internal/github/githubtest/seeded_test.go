package githubtest_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github/githubtest"
)

// A seeded fault depends on the request, not on the order requests arrive:
// the same requests asked in another order meet the same faults.
func TestServer_FailSeeded_SameFaultsInAnyOrder(t *testing.T) {
	t.Parallel()
	repo := githubtest.NewRepo(t)
	repo.Commit("empty")
	s := githubtest.NewServer(t, "o", "r", repo)
	paths := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	statuses := func(order []string) map[string][]int {
		got := map[string][]int{}
		for range 3 {
			for _, p := range order {
				resp, err := http.Get(s.URL() + "repos/o/r/git/blobs/" + p)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				got[p] = append(got[p], resp.StatusCode)
			}
		}
		return got
	}
	s.FailSeeded(githubtest.KindBlob, 7, 0.5, githubtest.ServerError(http.StatusBadGateway))
	first := statuses(paths)
	s.ClearFaults()
	s.FailSeeded(githubtest.KindBlob, 7, 0.5, githubtest.ServerError(http.StatusBadGateway))
	reversed := make([]string, len(paths))
	for i, p := range paths {
		reversed[len(paths)-1-i] = p
	}
	if diff := cmp.Diff(first, statuses(reversed)); diff != "" {
		t.Errorf("seeded faults depend on the order (-first +reversed):\n%s", diff)
	}
	failed := 0
	for _, st := range first {
		for _, code := range st {
			if code == http.StatusBadGateway {
				failed++
			}
		}
	}
	if failed == 0 || failed == 3*len(paths) {
		t.Errorf("%d of %d requests failed at p=0.5", failed, 3*len(paths))
	}
}
