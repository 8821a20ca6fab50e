package differ_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/policy"
)

// A full run's listing is split without a copy: current is the listed map,
// the v1 entries taken out of it.
func TestSplitV1_CurrentIsTheListingItself(t *testing.T) {
	t.Parallel()
	sha := "0123456789abcdef0123456789abcdef01234567"
	all := map[string]policy.Entry{
		"학칙":   {PolicyName: "학칙", SHA: sha, Path: "a/학칙.md"},
		"옛 규정": {Title: "옛 규정", Legacy: &policy.Legacy{FileNo: "7"}},
	}
	current, v1 := differ.SplitV1(all)
	if reflect.ValueOf(current).UnsafePointer() != reflect.ValueOf(all).UnsafePointer() {
		t.Error("current is a copy of the listing: the listing is held twice")
	}
	if diff := cmp.Diff(map[string]policy.Entry{"학칙": {PolicyName: "학칙", SHA: sha, Path: "a/학칙.md"}}, current); diff != "" {
		t.Errorf("current (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]policy.Entry{"옛 규정": {Title: "옛 규정", Legacy: &policy.Legacy{FileNo: "7"}}}, v1); diff != "" {
		t.Errorf("v1 (-want +got):\n%s", diff)
	}
	if current, v1 := differ.SplitV1(nil); current == nil || v1 == nil {
		t.Error("SplitV1(nil): want empty maps, not nil")
	}
}

// A put named like one v1 key whose title matches another v1 key: the put
// replaces the first key's value, so it carries that key's fields, and the
// second key, no longer taken, stays (reported in legacyV1). Review: the
// title match planned the second key's removal and the own-name rule then
// carried the first key's fields over its match: fileNo 868 was lost.
func TestMigrate_PutNamedOneV1KeyTitledAnother_LosesNoFields(t *testing.T) {
	t.Parallel()
	v1 := map[string]policy.Entry{
		"학칙":    {Title: "학칙", Legacy: &policy.Legacy{FileNo: "1"}},
		"학칙 전문": {Title: "학칙 전문", Legacy: &policy.Legacy{FileNo: "868"}},
	}
	plan := policy.Plan{Items: []policy.Item{{Action: policy.ActAdd, PolicyName: "학칙", Path: "학칙.md", SHA: sha(1), Title: "학칙 전문"}}}
	got, mig := differ.Migrate(plan, nil, v1, false, now)
	carried := mig.Carry["학칙"].V1().FileNo
	removed := map[string]bool{}
	for _, it := range got.Items {
		if it.Action == policy.ActMigrate && it.Path == "" {
			removed[it.PolicyName] = true
		}
	}
	// every v1 entry's fields must survive: carried by the put, or its key kept (unmatched)
	for key, e := range v1 {
		survives := carried == e.V1().FileNo || (!removed[key] && key != "학칙" && slices.Contains(mig.Unmatched, key))
		if !survives {
			t.Errorf("v1 policy:%s (fileNo %s) lost: carried fileNo %q, removed %v, unmatched %v", key, e.V1().FileNo, carried, removed, mig.Unmatched)
		}
	}
}

// Two puts: 학칙 (a v1 key's own name) titled "학칙 전문" (the other v1
// key's title), and 규정집 titled "학칙" (the first v1 key's title). The
// own-name rule may not give 학칙 its own key's fields, which 규정집 took
// by title: each v1 entry's fields are on one policy at most. Review: they
// were, and fileNo 1 was carried by two policies (학칙 and 규정집).
func TestMigrate_OwnNameRule_LeavesATitleMatchOfThatKey_NoFieldsCarriedTwice(t *testing.T) {
	t.Parallel()
	v1 := map[string]policy.Entry{
		"학칙":    {Title: "학칙", Legacy: &policy.Legacy{FileNo: "1"}},
		"학칙 전문": {Title: "학칙 전문", Legacy: &policy.Legacy{FileNo: "868"}},
	}
	plan := policy.Plan{Items: []policy.Item{
		{Action: policy.ActAdd, PolicyName: "학칙", Path: "학칙.md", SHA: sha(1), Title: "학칙 전문"},
		{Action: policy.ActAdd, PolicyName: "규정집", Path: "규정집.md", SHA: sha(2), Title: "학칙"},
	}}
	_, mig := differ.Migrate(plan, nil, v1, false, now)
	carriers := map[string][]string{}
	for name, e := range mig.Carry {
		carriers[e.V1().FileNo] = append(carriers[e.V1().FileNo], name)
	}
	for fileNo, names := range carriers {
		if len(names) > 1 {
			t.Errorf("fileNo %s carried by %v: one v1 entry's fields on two policies", fileNo, names)
		}
	}
}

// The same on a full run with the title match an unchanged entry: the
// rewrite (ActMigrate) of 규정집 is planned to carry 학칙's fields.
func TestMigrate_OwnNameRule_UnchangedEntryTitleMatch_NoFieldsCarriedTwice(t *testing.T) {
	t.Parallel()
	v1 := map[string]policy.Entry{
		"학칙":    {Title: "학칙", Legacy: &policy.Legacy{FileNo: "1"}},
		"학칙 전문": {Title: "학칙 전문", Legacy: &policy.Legacy{FileNo: "868"}},
	}
	entries := map[string]policy.Entry{"규정집": {PolicyName: "규정집", Path: "규정집.md", SHA: sha(2), Title: "학칙"}}
	plan := policy.Plan{Items: []policy.Item{{Action: policy.ActAdd, PolicyName: "학칙", Path: "학칙.md", SHA: sha(1), Title: "학칙 전문"}}}
	_, mig := differ.Migrate(plan, entries, v1, true, now)
	if c, ok := mig.Carry["규정집"]; ok && mig.Carry["학칙"].V1().FileNo == c.V1().FileNo {
		t.Errorf("학칙 and 규정집 both carry fileNo %s", c.V1().FileNo)
	}
}

func carriersOf(mig differ.Migration) map[string][]string {
	c := map[string][]string{}
	for name, e := range mig.Carry {
		c[e.V1().FileNo] = append(c[e.V1().FileNo], name)
	}
	return c
}

// Two new policies with the same H1 title (nothing makes titles unique),
// one v1 key of that title: one of them carries its fields, also when one
// of them is named like the key. Review: both did.
func TestMigrate_TwoPutsSameTitle_FieldsCarriedOnce(t *testing.T) {
	t.Parallel()
	v1 := map[string]policy.Entry{"학칙": {Title: "학칙", Legacy: &policy.Legacy{FileNo: "1"}}}
	for name, twins := range map[string][2]string{
		"two new names":          {"가", "나"},
		"one named like the key": {"학칙", "규정집"},
	} {
		plan := policy.Plan{Items: []policy.Item{
			{Action: policy.ActAdd, PolicyName: twins[0], Path: twins[0] + ".md", SHA: sha(1), Title: "학칙"},
			{Action: policy.ActAdd, PolicyName: twins[1], Path: twins[1] + ".md", SHA: sha(2), Title: "학칙"},
		}}
		_, mig := differ.Migrate(plan, nil, v1, false, now)
		for fileNo, names := range carriersOf(mig) {
			if len(names) > 1 {
				t.Errorf("%s: fileNo %s carried by %v", name, fileNo, names)
			}
		}
	}
}

// Chains: v1 A,B,C; puts A titled B, B titled C; and the cycle A<->B.
func TestMigrate_Chains(t *testing.T) {
	t.Parallel()
	v1 := map[string]policy.Entry{
		"A": {Title: "A", Legacy: &policy.Legacy{FileNo: "1"}},
		"B": {Title: "B", Legacy: &policy.Legacy{FileNo: "2"}},
		"C": {Title: "C", Legacy: &policy.Legacy{FileNo: "3"}},
	}
	cases := map[string][]policy.Item{
		"A→B,B→C":     {{Action: policy.ActAdd, PolicyName: "A", Path: "A.md", SHA: sha(1), Title: "B"}, {Action: policy.ActAdd, PolicyName: "B", Path: "B.md", SHA: sha(2), Title: "C"}},
		"A→C,B→A":     {{Action: policy.ActAdd, PolicyName: "A", Path: "A.md", SHA: sha(1), Title: "C"}, {Action: policy.ActAdd, PolicyName: "B", Path: "B.md", SHA: sha(2), Title: "A"}},
		"A↔B":         {{Action: policy.ActAdd, PolicyName: "A", Path: "A.md", SHA: sha(1), Title: "B"}, {Action: policy.ActAdd, PolicyName: "B", Path: "B.md", SHA: sha(2), Title: "A"}},
		"A→B,B→C,C→A": {{Action: policy.ActAdd, PolicyName: "A", Path: "A.md", SHA: sha(1), Title: "B"}, {Action: policy.ActAdd, PolicyName: "B", Path: "B.md", SHA: sha(2), Title: "C"}, {Action: policy.ActAdd, PolicyName: "C", Path: "C.md", SHA: sha(3), Title: "A"}},
		"X→A,A→B":     {{Action: policy.ActAdd, PolicyName: "X", Path: "X.md", SHA: sha(4), Title: "A"}, {Action: policy.ActAdd, PolicyName: "A", Path: "A.md", SHA: sha(1), Title: "B"}},
	}
	for name, items := range cases {
		for range 50 {
			plan, mig := differ.Migrate(policy.Plan{Items: append([]policy.Item{}, items...)}, nil, v1, false, now)
			seen := map[string]string{}
			for fileNo, names := range carriersOf(mig) {
				if len(names) > 1 {
					t.Errorf("%s: fileNo %s carried by %v", name, fileNo, names)
				}
				seen[fileNo] = names[0]
			}
			// every v1 key: carried, or kept (Unmatched), and a v1 key a put replaces must be carried
			for key, e := range v1 {
				_, carried := seen[e.V1().FileNo]
				kept := false
				for _, u := range mig.Unmatched {
					kept = kept || u == key
				}
				if !carried && !kept {
					t.Errorf("%s: v1 %s lost (carry %v, unmatched %v, plan %v)", name, key, carriersOf(mig), mig.Unmatched, plan.Items)
				}
				replaced := false
				for _, it := range items {
					replaced = replaced || it.PolicyName == key
				}
				if replaced && !carried {
					t.Errorf("%s: v1 %s overwritten by its put without being carried", name, key)
				}
			}
		}
	}
}

// Two v1 keys with the same title (one untitled, keyed by it; v1 keys are
// policy:{title}, but the stored title may differ): byTitle is built by
// ranging over the v1 map, so which key a policy of that title takes, and
// which is reported unmatched, changes from run to run.
func TestMigrate_TwoV1KeysSameTitle_Deterministic(t *testing.T) {
	t.Parallel()
	v1 := map[string]policy.Entry{
		"학칙":    {Legacy: &policy.Legacy{FileNo: "1"}},
		"학칙(구)": {Title: "학칙", Legacy: &policy.Legacy{FileNo: "2"}},
	}
	plan := policy.Plan{Items: []policy.Item{{Action: policy.ActAdd, PolicyName: "규정", Path: "규정.md", SHA: sha(1), Title: "학칙"}}}
	seen := map[string]bool{}
	for range 200 {
		_, mig := differ.Migrate(policy.Plan{Items: append([]policy.Item{}, plan.Items...)}, nil, v1, false, now)
		seen[mig.Carry["규정"].V1().FileNo] = true
	}
	if len(seen) > 1 {
		t.Errorf("규정 carries fileNo %v across identical runs: not deterministic", seen)
	}
}

// Two v1 keys of one title, over two runs: the first run carries one key's
// fields and removes it; the next run finds the other key of that title.
// An entry that carries v1 fields already does not take another key's:
// they would replace the fields it has (review: the first key's fileNo was
// lost). The other key stays, reported; a key whose fields the entry
// carries (its removal failed) is still matched, and removed.
func TestMigrate_EntryCarryingOtherV1Fields_DoesNotTakeAnotherKeys(t *testing.T) {
	t.Parallel()
	carried := policy.Entry{PolicyName: "규정", Path: "규정.md", SHA: sha(1), Title: "학칙",
		Legacy: &policy.Legacy{FileNo: "1", LegacyUntil: now.Add(time.Hour).Format(policy.TimeLayout)}}
	entries := map[string]policy.Entry{"규정": carried}
	other := map[string]policy.Entry{"학칙(구)": {Title: "학칙", Legacy: &policy.Legacy{FileNo: "2"}}}
	update := policy.Plan{Items: []policy.Item{{Action: policy.ActUpdate, PolicyName: "규정", Path: "규정.md", SHA: sha(2), Old: &policy.Old{Path: "규정.md", SHA: sha(1)}, Title: "학칙"}}}
	for name, tc := range map[string]struct {
		plan policy.Plan
		full bool
	}{
		"full run, entry unchanged":    {policy.Plan{}, true},
		"incremental, entry unchanged": {policy.Plan{}, false},
		"entry updated":                {update, false},
	} {
		t.Run(name, func(t *testing.T) {
			plan, mig := differ.Migrate(policy.Plan{Items: slices.Clone(tc.plan.Items)}, entries, other, tc.full, now)
			if c, ok := mig.Carry["규정"]; ok {
				t.Errorf("규정 takes fileNo %q over the %q it carries", c.V1().FileNo, "1")
			}
			if len(plan.Items) != len(tc.plan.Items) {
				t.Errorf("plan %+v, want the run's own items only: 학칙(구) kept, 규정 not rewritten", plan.Items)
			}
			if !slices.Equal(mig.Unmatched, []string{"학칙(구)"}) {
				t.Errorf("unmatched %q, want [학칙(구)]: kept and reported", mig.Unmatched)
			}
		})
	}
	same := map[string]policy.Entry{"학칙": {Legacy: &policy.Legacy{FileNo: "1"}}}
	plan, mig := differ.Migrate(policy.Plan{}, entries, same, false, now)
	if len(mig.Unmatched) != 0 || len(plan.Items) != 1 || plan.Items[0].PolicyName != "학칙" {
		t.Errorf("the key whose fields 규정 carries: plan %+v, unmatched %q; want its removal", plan.Items, mig.Unmatched)
	}
}
