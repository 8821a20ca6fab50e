package syncer

import (
	"testing"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
)

// Found by the soak with -soak.mirror (seed 70525): a plan that deletes a
// policy whose entry the registry read did not show (a read that lags,
// distrusted) left its object unwanted, so the listing's repair deleted
// it as foreign although the registry delete failed: the policy stayed
// published without its text. A plan's delete keeps its object wanted
// (mirrorDelete removes it once the registry delete landed); a head
// policy neither published nor written is not wanted (a stray), one the
// registry publishes or the plan writes is.
func TestMirrorWants_PlanDeletesWanted_UnpublishedUnwritten_Not(t *testing.T) {
	t.Parallel()
	reg := registryState{entries: map[string]policy.Entry{"가": {PolicyName: "가", SHA: "s1", ContentETag: `"e1"`}}}
	desired := differ.NewDesired(
		policy.Desired{PolicyName: "가", SHA: "s1"},
		policy.Desired{PolicyName: "나", SHA: "s2"}, // added by the plan
		policy.Desired{PolicyName: "다", SHA: "s3"}, // held back: neither published nor written
	)
	plan := policy.Plan{Items: []policy.Item{
		{PolicyName: "나", Action: policy.ActAdd, SHA: "s2"},
		{PolicyName: "라", Action: policy.ActDelete}, // the read did not show its entry
	}}
	want := mirrorWants(reg, desired, plan)
	if w, ok := want["라"]; !ok || !w.Keep {
		t.Errorf("the plan's delete of 라: want %+v (%v), want kept for mirrorDelete", w, ok)
	}
	if _, ok := want["다"]; ok {
		t.Errorf("다, neither published nor written, is wanted: its object would never be taken for a stray")
	}
	if want["가"] != (mirror.Want{SHA: "s1", UploadedSHA: "s1", ETag: `"e1"`}) || want["나"] != (mirror.Want{SHA: "s2"}) {
		t.Errorf("가 %+v, 나 %+v: want the registry's record and the plan's key", want["가"], want["나"])
	}
}
