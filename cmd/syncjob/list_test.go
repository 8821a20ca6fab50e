package main

import (
	"strings"
	"testing"
)

func TestCLI_List_ShowsPolicies(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		seed(w)
		w.sync(0)
		delete(w.env, "GITHUB_REPO") // list needs no repository
		r := w.run("list")
		if r.code != 0 || !strings.Contains(r.stdout, "한국교원대학교 학칙") || !strings.Contains(r.stdout, "3 policies") {
			t.Errorf("list: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		r = w.run("list", "--json")
		if r.code != 0 || !strings.Contains(r.stdout, `"policyName": "학칙"`) {
			t.Errorf("list --json: exit %d\n%s", r.code, r.stdout)
		}
	})
}
