package main

import (
	"net/http"
	"testing"

	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
)

// A listing answered 200 with "success": false (result null) was read as an
// empty page: a full run then saw no policy:, planned no delete, and
// recorded success while the registry still held a policy the head deleted
// (review).
func TestCloudflare_PolicyListing200SuccessFalse_NoWrongSuccess(t *testing.T) {
	t.Parallel()
	w := newCloudflareWorld(t)
	seed(w)
	w.sync(exitOK)
	w.repo.Remove("규정/제1편/대학원 학칙.md")
	head := w.repo.Commit("repeal the graduate school rules")
	w.cf.FailListing(registry.PolicyPrefix, cloudflaretest.Fault{Status: http.StatusOK, Code: cloudflaretest.CodeInternal, Message: "internal error"})
	r := w.run("sync", "--full")
	s := w.state()
	if _, still := s.policies["대학원 학칙"]; still && r.code == exitOK {
		t.Errorf("sync --full exit 0 (lastRun %s, lastCommit %s = head %v, added %d) while policy:대학원 학칙, deleted at the head, is still in the registry\nstderr:\n%s",
			s.lastRun.Status, s.lastCommit, s.lastCommit == head, s.lastRun.Added, r.stderr)
	}
}
