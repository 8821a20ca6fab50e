package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
)

// headState is what the registry must hold for a commit: policyName → path@sha,
// computed from the repository's files by the rules of docs/design.md, "Policy files".
func headState(w *world, commit string) map[string]string {
	byName := map[string][]string{}
	files := w.repo.Files(commit)
	for path := range files {
		if policy.IsPolicyPath(path) {
			n := policy.NameOf(path)
			byName[n] = append(byName[n], path)
		}
	}
	out := map[string]string{}
	for n, paths := range byName {
		slices.Sort(paths)
		out[n] = paths[0] + "@" + files[paths[0]]
	}
	return out
}

func registryState(s state) map[string]string {
	out := map[string]string{}
	for n, e := range s.policies {
		out[n] = e.Path + "@" + e.SHA
	}
	return out
}

var propertyLong = flag.Bool("property.long", false, "TestSync_Property_RandomHistories at full size (3 seeds of 24 steps); the default run has 1 seed of 4 steps")

// TestSync_Property_RandomHistories: for seeded random histories (adds,
// edits, deletes, renames, folder moves, duplicate names, NFD names, hidden
// folders and force-pushes), syncing after each commit or after random jumps of
// several commits leaves the registry equal to the head tree. Short by
// default; full size with -property.long:
//
//	go test -run Property_RandomHistories ./cmd/syncjob -property.long
func TestSync_Property_RandomHistories(t *testing.T) {
	t.Parallel()
	seeds, steps := uint64(1), 4
	if *propertyLong {
		seeds, steps = 3, 24
	}
	for seedN := range seeds {
		t.Run(fmt.Sprint("seed", seedN), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, w *world) {
				rng := rand.New(rand.NewPCG(seedN, 42))
				w.env["ALLOW_MASS_DELETE"] = "true" // random histories delete everything at times
				folders := []string{"규정", "규정/제1편", "규정/제2편 학사", "docs", "a(1)", ".hidden"}
				names := []string{"학칙", "대학원 학칙", "연구소 설치․운영 규정", "policy", "Rules", "README", "\u1112\u1161\u11a8\u110e\u1175\u11a8", "규정(개정)", "x"}
				live := map[string]bool{}
				pick := func() (string, bool) {
					if len(live) == 0 {
						return "", false
					}
					keys := make([]string, 0, len(live))
					for k := range live {
						keys = append(keys, k)
					}
					slices.Sort(keys)
					return keys[rng.IntN(len(keys))], true
				}
				randomPath := func() string {
					ext := ".md"
					if rng.IntN(8) == 0 {
						ext = ".MD"
					}
					return folders[rng.IntN(len(folders))] + "/" + names[rng.IntN(len(names))] + ext
				}
				var commits []string
				w.repo.Write("seed.md", "# seed\n")
				live["seed.md"] = true
				commits = append(commits, w.repo.Commit("seed"))
				for step := range steps {
					for range 1 + rng.IntN(3) {
						switch op := rng.IntN(10); {
						case op < 3:
							p := randomPath()
							w.repo.Write(p, fmt.Sprintf("# 제목 %d\n본문 %d\n", step, rng.IntN(1000)))
							live[p] = true
						case op < 5:
							if p, ok := pick(); ok {
								w.repo.Write(p, fmt.Sprintf("# 개정 %d\n%d\n", step, rng.IntN(1000)))
							}
						case op < 6:
							if p, ok := pick(); ok {
								w.repo.Remove(p)
								delete(live, p)
							}
						case op < 8:
							if p, ok := pick(); ok {
								to := randomPath()
								if !live[to] {
									w.repo.Move(p, to)
									delete(live, p)
									live[to] = true
								}
							}
						case op < 9 && len(commits) > 3:
							// force-push: back to an earlier commit
							back := commits[len(commits)-1-rng.IntN(3)]
							w.repo.Reset(back)
							live = map[string]bool{}
							for p := range w.repo.Files(back) {
								live[p] = true
							}
						default:
							w.repo.Write(fmt.Sprintf("잡동사니/%d.txt", rng.IntN(5)), fmt.Sprint(rng.IntN(100)))
						}
					}
					head := w.repo.Commit(fmt.Sprintf("step %d", step))
					commits = append(commits, head)
					if rng.IntN(3) == 0 && step != steps-1 {
						continue // jump: several commits land before the next run
					}
					w.sync(0)
					got := w.state()
					if diff := cmp.Diff(headState(w, head), registryState(got)); diff != "" {
						t.Fatalf("step %d (%s run): registry != head tree (-want +got):\n%s", step, got.lastRun.Mode, diff)
					}
					if got.lastCommit != head {
						t.Fatalf("step %d: lastCommit %s, want %s", step, got.lastCommit, head)
					}
				}
			})
		})
	}
}
