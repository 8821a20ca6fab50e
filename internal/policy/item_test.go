package policy_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
)

// TestItem_Compact: a plan item is 80 bytes, not 112 (an action of one byte,
// what it replaces held apart): a first sync holds one per policy through
// its read and apply (docs/bench.md, "How we got here", "Memory, sixth pass").
func TestItem_Compact(t *testing.T) {
	t.Parallel()
	if n := unsafe.Sizeof(policy.Item{}); n > 80 {
		t.Errorf("policy.Item is %d bytes, want at most 80", n)
	}
}

// TestItem_JSON_NamesAsWritten: an item reads and writes the JSON it
// always has (a dry run's plan): the action by name, oldPath and oldSha
// beside the others, absent for an add.
func TestItem_JSON_NamesAsWritten(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		item policy.Item
		json string
	}{
		{policy.Item{Action: policy.ActAdd, PolicyName: "가", Path: "a/가.md", SHA: "s1", Title: "T"},
			`{"action":"add","policyName":"가","path":"a/가.md","sha":"s1","title":"T"}`},
		{policy.Item{Action: policy.ActUpdate, PolicyName: "b", Path: "b.md", SHA: "s2", Old: policy.OldOf("x/b.md", "s1"), Title: "B"},
			`{"action":"update","policyName":"b","path":"b.md","sha":"s2","oldPath":"x/b.md","oldSha":"s1","title":"B"}`},
		{policy.Item{Action: policy.ActDelete, PolicyName: "c", Old: policy.OldOf("c.md", "s3")},
			`{"action":"delete","policyName":"c","oldPath":"c.md","oldSha":"s3"}`},
		{policy.Item{Action: policy.ActMigrate, PolicyName: "d", Path: "d.md"}, `{"action":"migrate","policyName":"d","path":"d.md"}`},
		{policy.Item{Action: policy.ActMove, PolicyName: "e"}, `{"action":"move","policyName":"e"}`},
	} {
		got, err := json.Marshal(c.item)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.json {
			t.Errorf("marshal %+v = %s, want %s", c.item, got, c.json)
		}
		var back policy.Item
		if err := json.Unmarshal([]byte(c.json), &back); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.item, back); diff != "" {
			t.Errorf("unmarshal %s (-want +got):\n%s", c.json, diff)
		}
	}
	var it policy.Item
	if err := json.Unmarshal([]byte(`{"action":"rename"}`), &it); err == nil {
		t.Errorf("unknown action read as %v, want an error", it.Action)
	}
	if it := (policy.Item{Action: policy.ActAdd}); it.OldPath() != "" || it.OldSHA() != "" || policy.OldOf("", "") != nil {
		t.Errorf("an add replaces %q@%q, want nothing", it.OldPath(), it.OldSHA())
	}
}

// A plan that counts changes it does not hold (Omitted: a first sync in
// windows) counts them in Counts, Len and RunChanges' omitted, and says
// so in JSON.
func TestPlan_Omitted_CountedEverywhere(t *testing.T) {
	t.Parallel()
	p := policy.Plan{Items: []policy.Item{{Action: policy.ActAdd, PolicyName: "a"}, {Action: policy.ActDelete, PolicyName: "z"}}, Unchanged: 3,
		Omitted: &policy.Counts{Added: 10, Updated: 2, Moved: 1, Deleted: 4, Migrated: 5}}
	want := policy.Counts{Added: 11, Updated: 2, Moved: 1, Deleted: 5, Migrated: 5, Unchanged: 3}
	if got := p.Counts(); got != want || p.Len() != 2+22 {
		t.Errorf("counts %+v, len %d; want %+v, 24", got, p.Len(), want)
	}
	if changes, omitted := p.RunChanges(); len(changes) != 2 || omitted != 17 {
		t.Errorf("%d changes, %d omitted; want 2, 17 (migrations are no change of the history's)", len(changes), omitted)
	}
	raw, err := json.Marshal(p)
	if err != nil || !strings.Contains(string(raw), `"omitted":{"added":10,"updated":2,"moved":1,"deleted":4,"migrated":5,"unchanged":0}`) {
		t.Errorf("JSON %s (%v): want the omitted counts", raw, err)
	}
}

// WaitingShown names what waits: the names kept (and how many more there
// are), and the policy files of the windows a first sync did not reach,
// apart (a reviewer: "20 names; 60 of them" read as 80 of 90).
func TestRunSummary_WaitingShown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sum  policy.RunSummary
		want string
	}{
		{policy.RunSummary{Waiting: 3, WaitingNames: []string{"a", "b", "c"}}, " (a, b, c)"},
		{policy.RunSummary{Waiting: 12, WaitingNames: []string{"a", "b"}, Unreached: 5}, " (a, b and 5 more; 5 policy files of windows not reached, not planned yet)"},
		{policy.RunSummary{Waiting: 60, Unreached: 60}, " (60 policy files of windows not reached, not planned yet)"},
		{policy.RunSummary{Waiting: 7}, ""},
	} {
		if got := c.sum.WaitingShown(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.sum, got, c.want)
		}
	}
}
