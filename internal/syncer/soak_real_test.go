package syncer_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
)

// soakRealRepo names a clone of the real policy repository (for example
// kadragon/KNUE-Policy-Hub) whose history TestSoak_ReplayRealHistory
// replays. Tests never reach the network, so the clone is made beforehand:
//
//	git clone --bare https://github.com/kadragon/KNUE-Policy-Hub /tmp/hub
//	go test -run Soak_ReplayRealHistory ./internal/syncer -soak.realrepo=/tmp/hub -v
var soakRealRepo = flag.String("soak.realrepo", "", "soak: a git repository whose first-parent history of HEAD the real-history replay syncs")

// TestSoak_ReplayRealHistory syncs every commit of a real repository's
// history, in order, into the Cloudflare fake under 5% request faults and
// 15% per-key bulk failures, checking the invariants after each run, then
// converges with one clean run. Without -soak.realrepo it has nothing to
// replay and says so.
func TestSoak_ReplayRealHistory(t *testing.T) {
	t.Parallel()
	if *soakRealRepo == "" {
		t.Log("no -soak.realrepo: nothing to replay (see the comment on soakRealRepo)")
		return
	}
	const seed = 2027
	repo := githubtest.NewRepo(t)
	repo.Git("fetch", "-q", "--no-tags", *soakRealRepo, "+HEAD:refs/heads/real")
	shas := strings.Fields(repo.Git("rev-list", "--reverse", "--first-parent", "real"))
	steps := make([]histStep, len(shas))
	for i, sha := range shas {
		steps[i] = histStep{N: i + 1, Head: sha, Desc: strings.TrimSpace(repo.Git("log", "-1", "--format=%s", sha))}
	}
	gh := githubtest.NewServer(t, "knue", "policies", repo)
	r := newSoakRig(t, backendCloudflare, seed, repo, gh, 0)
	r.opt.MaxFileSize = policy.DefaultMaxFileSize
	replayUnderFaults(t, r, "real history", seed, steps)
}

// TestSoak_RealHistory_FirstCommitToHead_PassesTheGuard syncs the real
// repository's first commit, then its head in one step: files renamed from
// numbers (1-2-1.md) to their titles and edited since. Their content
// survives under other names, so the mass-delete guard lets it through.
func TestSoak_RealHistory_FirstCommitToHead_PassesTheGuard(t *testing.T) {
	t.Parallel()
	if *soakRealRepo == "" {
		t.Log("no -soak.realrepo: nothing to replay (see the comment on soakRealRepo)")
		return
	}
	repo := githubtest.NewRepo(t)
	repo.Git("fetch", "-q", "--no-tags", *soakRealRepo, "+HEAD:refs/heads/real")
	shas := strings.Fields(repo.Git("rev-list", "--reverse", "--first-parent", "real"))
	gh := githubtest.NewServer(t, "knue", "policies", repo)
	r := newSoakRig(t, backendCloudflare, 1, repo, gh, 0)
	r.opt.MaxFileSize = policy.DefaultMaxFileSize
	for _, full := range []bool{false, true} {
		for _, head := range []string{shas[0], shas[len(shas)-1]} {
			pointMain(repo, head)
			opt := r.opt
			opt.Full = full && head != shas[0]
			res, _, err := r.run(runFaults{}, opt, 1)
			if err != nil {
				t.Fatalf("sync %s (full %v): %v (%+v)", head[:7], opt.Full, err, res.Summary)
			}
			t.Logf("%s (%s mode): %d added, %d updated, %d deleted", head[:7], res.Summary.Mode, res.Summary.Added, res.Summary.Updated, res.Summary.Deleted)
		}
		pointMain(repo, shas[0])
	}
}
