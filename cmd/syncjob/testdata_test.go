package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/syncer"

	"github.com/knue/syncjob/internal/lambda"
)

// The samples in testdata/ (see testdata/README.md) must stay true: each
// Lambda event asks for the run its name says, and the policy tree syncs to
// exactly the registry the README describes. The expected values are
// written out here, not computed by the code under test.

// testdataDir is the repository's top-level testdata folder, seen from this
// package's folder (where go test runs).
const testdataDir = "../../testdata"

func TestTestdata_Events_ParseToTheRunTheyName(t *testing.T) {
	t.Parallel()
	want := map[string]syncer.Options{
		"schedule.json": {Trigger: "schedule"},
		"backfill.json": {Trigger: "manual", Full: true},
		"dry-run.json":  {Trigger: "manual", Full: true, DryRun: true},
	}
	dir := filepath.Join(testdataDir, "events")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if diff := cmp.Diff([]string{"backfill.json", "dry-run.json", "schedule.json"}, files); diff != "" {
		t.Errorf("testdata/events holds other files than this test checks (-want +got):\n%s", diff)
	}
	for name, wantOpt := range want {
		t.Run(name, func(t *testing.T) {
			payload, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := lambda.ParseEvent(payload)
			if err != nil {
				t.Fatalf("parse %s: %v", name, err)
			}
			if diff := cmp.Diff(wantOpt, got); diff != "" {
				t.Errorf("%s: options (-want +got):\n%s", name, diff)
			}
		})
	}
}

func TestTestdata_Policies_SyncToSixPoliciesAndOneConflict(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, w *world) {
		mustLoadTree(t, w.repo, filepath.Join(testdataDir, "policies"))
		head := w.repo.Commit("the testdata policy tree")

		// The load kept the bytes that make the BOM and CRLF case a case.
		crlf := w.repo.ReadFile(head, "제2편 학사/학사 운영 규정.md")
		if !strings.HasPrefix(crlf, "\uFEFF# ") || !strings.Contains(crlf, "\r\n") {
			t.Fatalf("the BOM/CRLF sample lost its bytes on the way in: %q", crlf)
		}

		w.sync(0)
		s := w.state()

		wantPaths := map[string]string{
			"학칙":            "제1편 총칙/학칙.md",
			"대학원 학칙":        "제1편 총칙/대학원 학칙.md",
			"학사 운영 규정":      "제2편 학사/학사 운영 규정.md",
			"등록금 규정":        "제2편 학사/구 규정/등록금 규정.md",
			"연구소 설치(운영) 규정": "제3편 연구/연구소 설치(운영) 규정.md",
			"연구윤리 지침":       "제3편 연구/연구윤리 지침.md",
		}
		wantTitles := map[string]string{
			"학칙":            "한국교원대학교 학칙",
			"대학원 학칙":        "한국교원대학교 대학원 학칙",
			"학사 운영 규정":      "학사 운영 규정",
			"등록금 규정":        "등록금 규정(구 규정)",
			"연구소 설치(운영) 규정": "연구소 설치․운영 규정",
			"연구윤리 지침":       "연구윤리 지침",
		}
		wantConflicts := []policy.Conflict{{
			PolicyName: "등록금 규정",
			Winner:     "제2편 학사/구 규정/등록금 규정.md",
			Losers:     []string{"제2편 학사/등록금 규정.md"},
		}}
		if diff := cmp.Diff(wantPaths, s.paths()); diff != "" {
			t.Errorf("policies and paths (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantTitles, s.titles()); diff != "" {
			t.Errorf("titles (-want +got):\n%s", diff)
		}
		for name, path := range wantPaths {
			e, q := s.policies[name], s.queue[name]
			sha := w.repo.BlobSHA(head, path) // git's answer, not the program's
			if e.PolicyName != name || e.SHA != sha || e.Status != "active" || e.LastUpdated == "" {
				t.Errorf("policy:%s = %+v, want policyName %q, sha %s, status active, lastUpdated set", name, e, name, sha)
			}
			if q.PolicyName != name || q.SHA != sha || q.Operation != "add" || q.RetryCount != 0 || q.ErrorMessage != nil {
				t.Errorf("queue:%s = %+v, want an add of %s, no retries, no error", name, q, sha)
			}
		}

		// Exactly these keys: nothing for README.md, the PR template or the
		// losing path; one run-history key beside lastRun and lastCommit.
		var keys, runs []string
		for _, k := range s.keys {
			if strings.HasPrefix(k, "metadata:sync:run:") {
				runs = append(runs, k)
				continue
			}
			keys = append(keys, k)
		}
		var wantKeys []string
		for name := range wantPaths {
			wantKeys = append(wantKeys, "policy:"+name, "queue:"+name)
		}
		wantKeys = append(wantKeys, "metadata:sync:lastCommit", "metadata:sync:lastRun")
		slices.Sort(wantKeys)
		slices.Sort(keys)
		if diff := cmp.Diff(wantKeys, keys); diff != "" {
			t.Errorf("registry keys (-want +got):\n%s", diff)
		}
		if len(runs) != 1 {
			t.Errorf("run-history keys = %q, want one", runs)
		}

		if s.lastCommit != head {
			t.Errorf("lastCommit = %q, want the head %s", s.lastCommit, head)
		}
		lr := s.lastRun
		if lr == nil {
			t.Fatal("no lastRun")
		}
		if lr.Status != "success" || lr.Added != 6 || lr.Updated != 0 || lr.Deleted != 0 || lr.ErrorCount != 0 || len(lr.Skipped) != 0 {
			t.Errorf("lastRun = %s, %d added, %d updated, %d deleted, %d errors, skipped %v; want success, 6 added, nothing else",
				lr.Status, lr.Added, lr.Updated, lr.Deleted, lr.ErrorCount, lr.Skipped)
		}
		if diff := cmp.Diff(wantConflicts, lr.Conflicts); diff != "" {
			t.Errorf("lastRun conflicts (-want +got):\n%s", diff)
		}

		// The same path wins on every run, and the conflict is reported again.
		w.sync(0, "--full")
		again := w.state()
		if diff := cmp.Diff(wantPaths, again.paths()); diff != "" {
			t.Errorf("second run: policies and paths (-want +got):\n%s", diff)
		}
		if lr := again.lastRun; lr.Status != "success" || lr.Mode != "full" || lr.Unchanged != 6 || lr.Added+lr.Updated+lr.Moved+lr.Deleted != 0 {
			t.Errorf("second run = %s %s, %d unchanged, %d/%d/%d/%d written; want a full success that changes nothing",
				lr.Status, lr.Mode, lr.Unchanged, lr.Added, lr.Updated, lr.Moved, lr.Deleted)
		}
		if diff := cmp.Diff(wantConflicts, again.lastRun.Conflicts); diff != "" {
			t.Errorf("second run conflicts (-want +got):\n%s", diff)
		}
	})
}

// mustLoadTree writes every regular file under dir, dot folders included,
// into repo at the same relative path, byte for byte.
func mustLoadTree(t *testing.T, repo *githubtest.Repo, dir string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		repo.Write(filepath.ToSlash(rel), string(b))
		n++
		return nil
	})
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	if n == 0 {
		t.Fatalf("load %s: no files", dir)
	}
}
