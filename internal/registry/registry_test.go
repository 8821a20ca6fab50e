package registry_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/registry/cloudflare"
	"github.com/knue/syncjob/internal/registry/cloudflare/cloudflaretest"
	"github.com/knue/syncjob/internal/registry/registrytest"
)

// backends opens each store the schema is tested on; "cloudflare-like" lists
// keys without values, as Cloudflare does.
var backends = []struct {
	name string
	open func(t *testing.T, now func() time.Time) registry.Store
}{
	{"memory", func(t *testing.T, now func() time.Time) registry.Store { return registry.NewMemory(now) }},
	{"bolt", func(t *testing.T, now func() time.Time) registry.Store {
		return mustOpenBolt(t, filepath.Join(t.TempDir(), "registry.db"), now)
	}},
	{"cloudflare-like", func(t *testing.T, now func() time.Time) registry.Store {
		f := registrytest.NewFaulty(registry.NewMemory(now))
		f.ListKeysOnly(true)
		return f
	}},
	{"cloudflare-fake", func(t *testing.T, now func() time.Time) registry.Store {
		fake := cloudflaretest.New(cloudflaretest.Config{Now: now})
		t.Cleanup(fake.Close)
		s, err := cloudflare.New(cloudflare.Config{
			AccountID: "account", NamespaceID: "namespace", APIToken: "token",
			BaseURL: fake.BaseURL(), HTTPClient: fake.Client(), Now: now,
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

func forEachBackend(t *testing.T, test func(t *testing.T, r *registry.Registry, clock *registrytest.Clock)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			clock := registrytest.NewClock(registrytest.Epoch)
			s := b.open(t, clock.Now)
			t.Cleanup(func() { _ = s.Close() })
			test(t, registry.New(s), clock)
		})
	}
}

func strPtr(s string) *string { return &s }

func TestRegistry_Schema_RoundTrips(t *testing.T) {
	t.Parallel()
	entries := []policy.Entry{
		{PolicyName: "학칙", Title: "한국교원대학교 학칙", Status: policy.StatusActive, LastUpdated: "2025-03-01T16:00:00Z", SHA: strings.Repeat("a", 40), Path: "규정/학칙.md"},
		{PolicyName: "교원 인사 규정(2024)", Title: "R&D <규정>", Status: policy.StatusActive, LastUpdated: "2025-03-01T16:00:00Z", SHA: strings.Repeat("b", 40), Path: "a/교원 인사 규정(2024).md", Legacy: &policy.Legacy{FileNo: "12", PreviewURL: "https://x/p?a=1&b=2", DownloadURL: "https://x/d"}},
	}
	queue := []policy.QueueEntry{
		{PolicyName: "학칙", SHA: strings.Repeat("a", 40), Operation: policy.OpAdd, CreatedAt: "2025-03-01T16:00:00Z"},
		{PolicyName: "제1\u20242조", SHA: strings.Repeat("c", 40), Operation: policy.OpUpdate, RetryCount: 2, CreatedAt: "2025-03-01T16:00:00Z", ErrorMessage: strPtr("cloudflare: 500")},
	}
	dead := []policy.DeadLetter{{
		QueueEntry: policy.QueueEntry{PolicyName: "규정:부칙", SHA: strings.Repeat("d", 40), Operation: policy.OpAdd, RetryCount: 3, CreatedAt: "2025-02-01T16:00:00Z", ErrorMessage: strPtr("boom")},
		DeadAt:     "2025-03-01T16:00:00Z",
		Reason:     "retries exhausted",
	}}
	forEachBackend(t, func(t *testing.T, r *registry.Registry, _ *registrytest.Clock) {
		var pairs []registry.Pair
		for _, e := range entries {
			pairs = append(pairs, registry.PolicyPair(e))
		}
		for _, q := range queue {
			pairs = append(pairs, registry.QueuePair(q))
		}
		for _, d := range dead {
			pairs = append(pairs, registry.DeadLetterPair(d))
		}
		registrytest.MustPut(t, registry.StoreOf(r), pairs...)

		gotEntries, problems, err := r.Policies(t.Context())
		if err != nil || problems != nil {
			t.Fatalf("Policies: problems %v, err %v", problems, err)
		}
		wantEntries := map[string]policy.Entry{}
		for _, e := range entries {
			wantEntries[e.PolicyName] = e
		}
		if diff := cmp.Diff(wantEntries, gotEntries); diff != "" {
			t.Errorf("Policies (-want +got):\n%s", diff)
		}

		gotQueue, err := r.Queue(t.Context())
		if err != nil {
			t.Fatalf("Queue: %v", err)
		}
		wantQueue := map[string]policy.QueueEntry{}
		for _, q := range queue {
			wantQueue[q.PolicyName] = q
		}
		if diff := cmp.Diff(wantQueue, gotQueue); diff != "" {
			t.Errorf("Queue (-want +got):\n%s", diff)
		}

		gotDead, err := r.DeadLetters(t.Context())
		if err != nil {
			t.Fatalf("DeadLetters: %v", err)
		}
		if diff := cmp.Diff(map[string]policy.DeadLetter{dead[0].PolicyName: dead[0]}, gotDead); diff != "" {
			t.Errorf("DeadLetters (-want +got):\n%s", diff)
		}
	})
}

func TestPolicyPair_MetadataIsACompleteListing(t *testing.T) {
	t.Parallel()
	e := policy.Entry{PolicyName: "학칙", Title: "학칙 & 부칙", Status: policy.StatusActive, LastUpdated: "2025-03-01T16:00:00Z", SHA: "abc", Path: "학칙.md"}
	p := registry.PolicyPair(e)
	want := registry.Pair{
		Key:      "policy:학칙",
		Value:    []byte(`{"policyName":"학칙","title":"학칙 & 부칙","status":"active","lastUpdated":"2025-03-01T16:00:00Z","sha":"abc","path":"학칙.md"}`),
		Metadata: json.RawMessage(`{"sha":"abc","path":"학칙.md","title":"학칙 & 부칙","lastUpdated":"2025-03-01T16:00:00Z"}`),
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("PolicyPair (-want +got):\n%s", diff)
	}
	if err := registry.CheckPair(p); err != nil {
		t.Errorf("CheckPair: %v", err)
	}
}

func TestPolicyPair_LegacyFields_MarkedLegacy(t *testing.T) {
	t.Parallel()
	e := policy.Entry{PolicyName: "a", Title: "A", Status: policy.StatusActive, LastUpdated: "t", SHA: "s", Path: "a.md", Legacy: &policy.Legacy{FileNo: "7"}}
	want := `{"sha":"s","path":"a.md","title":"A","lastUpdated":"t","legacy":true}`
	if got := string(registry.PolicyPair(e).Metadata); got != want {
		t.Errorf("metadata = %s, want %s", got, want)
	}
}

func TestPolicyPair_OversizeMetadata_ShaOnly(t *testing.T) {
	t.Parallel()
	e := policy.Entry{PolicyName: "a", Title: strings.Repeat("긴 제목 ", 100), Status: policy.StatusActive, LastUpdated: "t", SHA: strings.Repeat("f", 40), Path: "a.md"}
	p := registry.PolicyPair(e)
	if want := `{"sha":"` + strings.Repeat("f", 40) + `"}`; string(p.Metadata) != want {
		t.Errorf("metadata = %s, want %s", p.Metadata, want)
	}
	if err := registry.CheckPair(p); err != nil {
		t.Errorf("CheckPair: %v", err)
	}
	// Just under the limit keeps everything.
	e.Title = ""
	base := len(registry.PolicyPair(e).Metadata)
	e.Title = strings.Repeat("x", policy.MaxMetadataBytes-base)
	if p := registry.PolicyPair(e); len(p.Metadata) != policy.MaxMetadataBytes || !strings.Contains(string(p.Metadata), `"title"`) {
		t.Errorf("metadata of %d bytes = %.60s..., want all fields at exactly %d bytes", len(p.Metadata), p.Metadata, policy.MaxMetadataBytes)
	}
}

func TestRegistry_Policies_ListingWithoutValues_GetsOnlyIncompleteKeys(t *testing.T) {
	t.Parallel()
	f := registrytest.NewFaulty(registry.NewMemory(nil))
	r := registry.New(f)
	sha := strings.Repeat("a", 40)
	complete := []policy.Entry{
		{PolicyName: "학칙", Title: "한국교원대학교 학칙", Status: policy.StatusActive, LastUpdated: "2025-03-01T16:00:00Z", SHA: sha, Path: "규정/학칙.md"},
		{PolicyName: "제1\u20242조 (a:b)", Title: "", Status: policy.StatusActive, LastUpdated: "", SHA: "", Path: ""},
		{PolicyName: "c", Title: "C", Status: policy.StatusActive, LastUpdated: "t", SHA: sha, Path: "x/c.md"},
	}
	legacy := policy.Entry{PolicyName: "legacy", Title: "L", Status: policy.StatusActive, LastUpdated: "t", SHA: sha, Path: "l.md", Legacy: &policy.Legacy{FileNo: "3", PreviewURL: "https://p"}}
	long := policy.Entry{PolicyName: "long", Title: strings.Repeat("t", 2000), Status: policy.StatusActive, LastUpdated: "t", SHA: sha, Path: "long.md"}
	pairs := []registry.Pair{registry.PolicyPair(legacy), registry.PolicyPair(long)}
	for _, e := range complete {
		pairs = append(pairs, registry.PolicyPair(e))
	}
	pairs = append(pairs,
		registry.Pair{Key: "policy:v1 제목", Value: []byte(`{"title":"v1 제목","fileNo":"9","status":"active"}`)},
		registry.Pair{Key: "policy:handwritten", Value: []byte(`{"policyName":"handwritten","sha":"s","path":"h.md"}`), Metadata: json.RawMessage(`{"sha":"s"}`)},
	)
	registrytest.MustPut(t, f, pairs...)
	f.ListKeysOnly(true)

	got, problems, err := r.Policies(t.Context())
	if err != nil || problems != nil {
		t.Fatalf("Policies: problems %v, err %v", problems, err)
	}
	want := map[string]policy.Entry{
		"legacy":      legacy,
		"long":        long,
		"v1 제목":       {Title: "v1 제목", Legacy: &policy.Legacy{FileNo: "9"}, Status: policy.StatusActive},
		"handwritten": {PolicyName: "handwritten", SHA: "s", Path: "h.md"},
	}
	for _, e := range complete {
		want[e.PolicyName] = e
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Policies (-want +got):\n%s", diff)
	}
	var gets []string
	for _, c := range f.Log() {
		if c.Method == registrytest.Get {
			gets = append(gets, c.Keys...)
		}
	}
	slices.Sort(gets)
	if diff := cmp.Diff([]string{"policy:handwritten", "policy:legacy", "policy:long", "policy:v1 제목"}, gets); diff != "" {
		t.Errorf("Gets: one per legacy, hand-written or oversize key, none for complete metadata (-want +got):\n%s", diff)
	}
	if got := f.Calls(registrytest.List); got != 1 {
		t.Errorf("List calls = %d, want 1", got)
	}
}

func TestRegistry_Policies_CompleteMetadataOnly_ZeroGets(t *testing.T) {
	t.Parallel()
	f := registrytest.NewFaulty(registry.NewMemory(nil))
	var pairs []registry.Pair
	for i := range 300 {
		pairs = append(pairs, registry.PolicyPair(policy.Entry{PolicyName: fmt.Sprintf("규정 %03d", i), Title: "T", Status: policy.StatusActive, LastUpdated: "t", SHA: "s", Path: "p.md"}))
	}
	registrytest.MustPut(t, f, pairs...)
	f.ListKeysOnly(true)
	got, _, err := registry.New(f).Policies(t.Context())
	if err != nil || len(got) != 300 {
		t.Fatalf("Policies = %d entries, %v; want 300", len(got), err)
	}
	if n := f.Calls(registrytest.Get); n != 0 {
		t.Errorf("Gets = %d, want 0", n)
	}
}

func TestQueuePair_NullErrorMessage(t *testing.T) {
	t.Parallel()
	q := policy.QueueEntry{PolicyName: "a", SHA: "s", Operation: policy.OpAdd, CreatedAt: "t"}
	want := `{"policyName":"a","sha":"s","operation":"add","retryCount":0,"createdAt":"t","errorMessage":null}`
	if got := string(registry.QueuePair(q).Value); got != want {
		t.Errorf("QueuePair value = %s, want %s", got, want)
	}
	if got := registry.QueuePair(q).Key; got != "queue:a" {
		t.Errorf("key = %q, want queue:a", got)
	}
	if got := registry.DeadLetterPair(policy.DeadLetter{QueueEntry: q}).Key; got != "dead-letter:a" {
		t.Errorf("dead-letter key = %q, want dead-letter:a", got)
	}
}

func TestRegistry_Policies_LegacyV1_Decodes(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, r *registry.Registry, _ *registrytest.Clock) {
		registrytest.MustPut(t, registry.StoreOf(r), registry.Pair{
			Key:   "policy:한국교원대학교 학칙",
			Value: []byte(`{"title":"한국교원대학교 학칙","fileNo":"3","previewUrl":"https://p","downloadUrl":"https://d","status":"active","lastUpdated":"2024-01-01T00:00:00Z"}`),
		})
		got, problems, err := r.Policies(t.Context())
		if err != nil || problems != nil {
			t.Fatalf("Policies: problems %v, err %v", problems, err)
		}
		want := map[string]policy.Entry{"한국교원대학교 학칙": {
			Title: "한국교원대학교 학칙", Legacy: &policy.Legacy{FileNo: "3", PreviewURL: "https://p", DownloadURL: "https://d"},
			Status: "active", LastUpdated: "2024-01-01T00:00:00Z",
		}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Policies (-want +got):\n%s", diff)
		}
	})
}

func TestRegistry_Policies_UndecodableIsAProblemNotAFailure(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, r *registry.Registry, _ *registrytest.Clock) {
		good := policy.Entry{PolicyName: "good", SHA: "s", Path: "good.md", Status: policy.StatusActive}
		registrytest.MustPut(t, registry.StoreOf(r),
			registry.PolicyPair(good),
			registry.Pair{Key: "policy:truncated", Value: []byte(`{"policyName":"trunc`)},
			registry.Pair{Key: "policy:null", Value: []byte(`null`)},
			registry.Pair{Key: "policy:string", Value: []byte(`"x"`)},
			registry.Pair{Key: "policy:wrongtype", Value: []byte(`{"sha":5}`)},
			registry.Pair{Key: "queue:bad", Value: []byte(`[]`)},
			registry.Pair{Key: "queue:good", Value: registry.QueuePair(policy.QueueEntry{PolicyName: "good"}).Value},
		)
		got, problems, err := r.Policies(t.Context())
		if err != nil {
			t.Fatalf("Policies: %v", err)
		}
		if diff := cmp.Diff(map[string]policy.Entry{"good": good}, got); diff != "" {
			t.Errorf("Policies (-want +got):\n%s", diff)
		}
		keys := slices.Sorted(maps.Keys(problems))
		if diff := cmp.Diff([]string{"policy:null", "policy:string", "policy:truncated", "policy:wrongtype"}, keys); diff != "" {
			t.Errorf("problem keys (-want +got):\n%s", diff)
		}

		q, err := r.Queue(t.Context())
		var de *registry.DecodeError
		if !errors.As(err, &de) || len(de.Problems) != 1 || de.Problems["queue:bad"] == nil {
			t.Fatalf("Queue: err = %v, want a DecodeError naming queue:bad", err)
		}
		if _, ok := q["good"]; !ok || len(q) != 1 {
			t.Errorf("Queue = %v, want the good entry alongside the DecodeError", q)
		}
	})
}

func TestRegistry_Empty_AbsentsAreZero(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, r *registry.Registry, _ *registrytest.Clock) {
		if c, err := r.LastCommit(t.Context()); c != "" || err != nil {
			t.Errorf("LastCommit = %q, %v; want \"\", nil", c, err)
		}
		if s, err := r.LastRun(t.Context()); s != nil || err != nil {
			t.Errorf("LastRun = %v, %v; want nil, nil", s, err)
		}
		if runs, err := r.Runs(t.Context(), 10); len(runs) != 0 || err != nil {
			t.Errorf("Runs = %v, %v; want none", runs, err)
		}
		p, problems, err := r.Policies(t.Context())
		if len(p) != 0 || problems != nil || err != nil {
			t.Errorf("Policies = %v, %v, %v; want none", p, problems, err)
		}
	})
}

func TestRunKey_InvertedMillis(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{time.UnixMilli(1700000000000), "metadata:sync:run:8299999999999:r1"},
		{time.UnixMilli(1700000000001), "metadata:sync:run:8299999999998:r1"},
		{time.UnixMilli(0), "metadata:sync:run:9999999999999:r1"},
		{time.UnixMilli(9000000000000), "metadata:sync:run:0999999999999:r1"},
	} {
		if got := registry.RunKey(tc.at, "r1"); got != tc.want {
			t.Errorf("RunKey(%d) = %q, want %q", tc.at.UnixMilli(), got, tc.want)
		}
	}
	if a, b := registry.RunKey(registrytest.Epoch.Add(time.Millisecond), "a"), registry.RunKey(registrytest.Epoch, "z"); a >= b {
		t.Errorf("newer run key %q does not sort before older %q", a, b)
	}
}

func summary(id string, at time.Time, status string) policy.RunSummary {
	return policy.RunSummary{
		Timestamp: at.UTC().Format(time.RFC3339), RunID: id, Status: status, Trigger: "schedule", Mode: "full",
		CommitSHA: "head-" + id, Added: 2, TotalProcessed: 2,
		Skipped:   []policy.Skip{{Path: "빈 파일.md", Reason: "empty"}},
		Conflicts: []policy.Conflict{{PolicyName: "학칙", Winner: "a/학칙.md", Losers: []string{"b/학칙.md"}}},
		Requests:  map[string]int64{"github": 1, "registry": 3},
	}
}

func TestRegistry_RecordRun_NewestFirstAndExpiresAfter90Days(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, r *registry.Registry, clock *registrytest.Clock) {
		var want []policy.RunSummary
		for i, id := range []string{"run-1", "run-2", "run-3"} {
			at := clock.Now()
			s := summary(id, at, policy.RunSuccess)
			if err := r.RecordRun(t.Context(), s, at, "commit-"+id); err != nil {
				t.Fatalf("RecordRun %d: %v", i, err)
			}
			want = append([]policy.RunSummary{s}, want...)
			clock.Advance(24 * time.Hour)
		}
		runs, err := r.Runs(t.Context(), 0)
		if err != nil {
			t.Fatalf("Runs: %v", err)
		}
		if diff := cmp.Diff(want, runs); diff != "" {
			t.Errorf("Runs newest first (-want +got):\n%s", diff)
		}
		runs, err = r.Runs(t.Context(), 2)
		if err != nil {
			t.Fatalf("Runs(2): %v", err)
		}
		if diff := cmp.Diff(want[:2], runs); diff != "" {
			t.Errorf("Runs(2) (-want +got):\n%s", diff)
		}
		last, err := r.LastRun(t.Context())
		if err != nil {
			t.Fatalf("LastRun: %v", err)
		}
		if diff := cmp.Diff(&want[0], last); diff != "" {
			t.Errorf("LastRun (-want +got):\n%s", diff)
		}

		// run-1 was recorded at Epoch; it lives 90 days to the nanosecond.
		clock.Set(registrytest.Epoch.Add(registry.RunTTL - time.Second))
		if runs, _ := r.Runs(t.Context(), 0); len(runs) != 3 {
			t.Errorf("Runs just before 90 days = %d, want 3", len(runs))
		}
		clock.Set(registrytest.Epoch.Add(registry.RunTTL))
		runs, err = r.Runs(t.Context(), 0)
		if err != nil {
			t.Fatalf("Runs: %v", err)
		}
		if diff := cmp.Diff(want[:2], runs); diff != "" {
			t.Errorf("Runs after run-1's 90 days (-want +got):\n%s", diff)
		}
		// lastRun and lastCommit do not expire.
		clock.Advance(365 * 24 * time.Hour)
		if last, err := r.LastRun(t.Context()); err != nil || last == nil || last.RunID != "run-3" {
			t.Errorf("LastRun a year later = %v, %v; want run-3", last, err)
		}
		if c, err := r.LastCommit(t.Context()); c != "commit-run-3" || err != nil {
			t.Errorf("LastCommit a year later = %q, %v; want commit-run-3", c, err)
		}
	})
}

func TestRegistry_RecordRun_LastCommitRawString_AdvanceOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, r *registry.Registry, clock *registrytest.Clock) {
		sha := "0123456789abcdef0123456789abcdef01234567"
		if err := r.RecordRun(t.Context(), summary("a", clock.Now(), policy.RunSuccess), clock.Now(), sha); err != nil {
			t.Fatalf("RecordRun: %v", err)
		}
		if raw := registrytest.MustGet(t, registry.StoreOf(r), registry.LastCommitKey); string(raw) != sha {
			t.Errorf("stored lastCommit = %q, want the raw sha %q", raw, sha)
		}
		clock.Advance(time.Hour)
		failed := summary("b", clock.Now(), policy.RunFailed)
		if err := r.RecordRun(t.Context(), failed, clock.Now(), ""); err != nil {
			t.Fatalf("RecordRun: %v", err)
		}
		if c, err := r.LastCommit(t.Context()); c != sha || err != nil {
			t.Errorf("LastCommit after a failed run = %q, %v; want %q kept", c, err, sha)
		}
		if last, _ := r.LastRun(t.Context()); last == nil || last.Status != policy.RunFailed {
			t.Errorf("LastRun = %v, want the failed run", last)
		}
	})
}

func TestRegistry_LastCommit_ToleratesQuotedAndSpaced(t *testing.T) {
	t.Parallel()
	for stored, want := range map[string]string{
		`"abc123"`:  "abc123",
		"abc123\n":  "abc123",
		" abc123 ":  "abc123",
		`"unclosed`: `"unclosed`,
	} {
		s := registry.NewMemory(nil)
		registrytest.MustPut(t, s, registry.Pair{Key: registry.LastCommitKey, Value: []byte(stored)})
		if got, err := registry.New(s).LastCommit(t.Context()); got != want || err != nil {
			t.Errorf("LastCommit of %q = %q, %v; want %q", stored, got, err, want)
		}
	}
}

func TestRegistry_RecordRun_LastRunFails_NoAdvance(t *testing.T) {
	t.Parallel()
	clock := registrytest.NewClock(registrytest.Epoch)
	f := registrytest.NewFaulty(registry.NewMemory(clock.Now))
	r := registry.New(f)
	if err := r.RecordRun(t.Context(), summary("a", clock.Now(), policy.RunSuccess), clock.Now(), "old"); err != nil {
		t.Fatalf("RecordRun: %v", err)
	}
	boom := errors.New("cloudflare: 500")
	f.FailKeys(map[string]error{registry.LastRunKey: boom})
	err := r.RecordRun(t.Context(), summary("b", clock.Now(), policy.RunSuccess), clock.Now(), "new")
	var be *registry.BatchError
	if !errors.As(err, &be) || !errors.Is(err, boom) || !strings.Contains(err.Error(), registry.LastRunKey) {
		t.Fatalf("RecordRun: err = %v, want a BatchError naming %s", err, registry.LastRunKey)
	}
	if c, _ := r.LastCommit(t.Context()); c != "old" {
		t.Errorf("LastCommit = %q, want old (not advanced past an unrecorded run)", c)
	}
	// The history key landed in the same batch.
	if runs, _ := r.Runs(t.Context(), 0); len(runs) != 2 {
		t.Errorf("Runs = %d, want 2", len(runs))
	}
}

func TestRegistry_RecordRun_LastCommitFails_ErrorNamesIt(t *testing.T) {
	t.Parallel()
	f := registrytest.NewFaulty(registry.NewMemory(nil))
	f.FailKeys(map[string]error{registry.LastCommitKey: errors.New("boom")})
	err := registry.New(f).RecordRun(t.Context(), summary("a", time.Now(), policy.RunSuccess), time.Now(), "sha")
	if err == nil || !strings.Contains(err.Error(), registry.LastCommitKey) {
		t.Fatalf("RecordRun: err = %v, want it to name %s", err, registry.LastCommitKey)
	}
	if got := f.Calls(registrytest.Put); got != 2 {
		t.Errorf("Put calls = %d, want 2 (history+lastRun, then lastCommit)", got)
	}
}

func TestRegistry_ReadFailures_AreErrors(t *testing.T) {
	t.Parallel()
	f := registrytest.NewFaulty(registry.NewMemory(nil))
	r := registry.New(f)
	registrytest.MustPut(t, f, registry.PolicyPair(policy.Entry{PolicyName: "a"}))
	boom := errors.New("boom")

	f.FailList(boom)
	if _, _, err := r.Policies(t.Context()); !errors.Is(err, boom) {
		t.Errorf("Policies with List failing: err = %v, want boom", err)
	}
	if _, err := r.Queue(t.Context()); !errors.Is(err, boom) {
		t.Errorf("Queue with List failing: err = %v, want boom", err)
	}
	if _, err := r.Runs(t.Context(), 1); !errors.Is(err, boom) {
		t.Errorf("Runs with List failing: err = %v, want boom", err)
	}
	f.FailList(nil)

	f.ListKeysOnly(true)
	f.FailGet(boom)
	if _, _, err := r.Policies(t.Context()); !errors.Is(err, boom) {
		t.Errorf("Policies with Get failing: err = %v, want boom", err)
	}
	if _, err := r.LastCommit(t.Context()); !errors.Is(err, boom) {
		t.Errorf("LastCommit with Get failing: err = %v, want boom", err)
	}
	if _, err := r.LastRun(t.Context()); !errors.Is(err, boom) {
		t.Errorf("LastRun with Get failing: err = %v, want boom", err)
	}
}

func TestRegistry_LastRun_Undecodable_Error(t *testing.T) {
	t.Parallel()
	s := registry.NewMemory(nil)
	registrytest.MustPut(t, s, registry.Pair{Key: registry.LastRunKey, Value: []byte("garbage")})
	if s, err := registry.New(s).LastRun(t.Context()); err == nil || s != nil {
		t.Errorf("LastRun = %v, %v; want an error", s, err)
	}
}

// repeatedLayer returns a part of an error message ("registry", `list
// "policy:"`, quoted or not) said more than once, or "" when each layer
// says its part once.
func repeatedLayer(msg string) string {
	seen := map[string]bool{}
	for _, part := range strings.Split(msg, ": ") {
		part = strings.ReplaceAll(part, `"`, "")
		if seen[part] {
			return part
		}
		seen[part] = true
	}
	return ""
}

func TestRegistry_ReadFailures_SayEachLayerOnce(t *testing.T) {
	t.Parallel()
	f := registrytest.NewFaulty(registry.NewMemory(nil))
	r := registry.New(f)
	registrytest.MustPut(t, f,
		registry.PolicyPair(policy.Entry{PolicyName: "a"}),
		registry.QueuePair(policy.QueueEntry{PolicyName: "a", ErrorMessage: strPtr("x")}),
		registry.DeadLetterPair(policy.DeadLetter{QueueEntry: policy.QueueEntry{PolicyName: "a"}}),
	)
	boom := errors.New("boom")
	reads := map[string]func() error{
		"Policies":      func() error { _, _, err := r.Policies(t.Context()); return err },
		"Queue":         func() error { _, err := r.Queue(t.Context()); return err },
		"FailedQueue":   func() error { _, err := r.FailedQueue(t.Context()); return err },
		"DeadLetters":   func() error { _, err := r.DeadLetters(t.Context()); return err },
		"Runs":          func() error { _, err := r.Runs(t.Context(), 0); return err },
		"RunIndex":      func() error { _, err := r.RunIndex(t.Context()); return err },
		"CountPolicies": func() error { _, _, err := r.CountPolicies(t.Context()); return err },
		"DeadLetter":    func() error { _, err := r.DeadLetter(t.Context(), "a"); return err },
		"Policy":        func() error { _, _, err := r.Policy(t.Context(), "a"); return err },
	}
	for _, mode := range []string{"list fails", "get of a listed key fails"} {
		f.FailList(nil)
		f.FailGet(nil)
		f.ListKeysOnly(mode != "list fails")
		if mode == "list fails" {
			f.FailList(boom)
		} else {
			f.FailGet(boom)
		}
		for name, read := range reads {
			err := read()
			if err == nil {
				continue // this read does not list, or does not get
			}
			if !errors.Is(err, boom) || strings.Count(err.Error(), "registry: ") != 1 {
				t.Errorf("%s, %s: %v; want boom, under one registry: layer", mode, name, err)
			}
			if part := repeatedLayer(err.Error()); part != "" {
				t.Errorf("%s, %s: %q says %q twice", mode, name, err, part)
			}
			for _, key := range []string{"policy:a", "dead-letter:a", "queue:a"} {
				if strings.Count(err.Error(), key) > 1 {
					t.Errorf("%s, %s: %q names %s twice", mode, name, err, key)
				}
			}
		}
	}
}

// A legacy fileNo is copied from a v1 entry as it is, however long. Its
// queue announcement and dead letter still make pairs KV takes (metadata at
// most 1,024 bytes: before, one of some 850 bytes made a pair every run
// refused), and read back whole from their values.
func TestQueuePair_LongLegacyFileNo_FitsAndReadsBackWhole(t *testing.T) {
	t.Parallel()
	fileNo := strings.Repeat("제", 700) // 2,100 bytes
	q := policy.QueueEntry{PolicyName: "a", SHA: strings.Repeat("a", 40), Operation: "update", CreatedAt: "2025-03-01T16:00:00Z", FileNo: fileNo, AttemptID: "r1", ErrorMessage: strPtr(strings.Repeat("e", 300))}
	d := policy.DeadLetter{QueueEntry: q, DeadAt: "2025-03-02T16:00:00Z", Reason: "three failures"}
	for _, p := range []registry.Pair{registry.QueuePair(q), registry.DeadLetterPair(d)} {
		if err := registry.CheckPair(p); err != nil {
			t.Errorf("%s: CheckPair: %v", p.Key, err)
		}
	}
	f := registrytest.NewFaulty(registry.NewMemory(nil))
	registrytest.MustPut(t, f, registry.QueuePair(q), registry.DeadLetterPair(d))
	r := registry.New(f)
	queue, err := r.Queue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]policy.QueueEntry{"a": q}, queue); diff != "" {
		t.Errorf("Queue (-want +got):\n%s", diff)
	}
	dead, err := r.DeadLetters(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]policy.DeadLetter{"a": d}, dead); diff != "" {
		t.Errorf("DeadLetters (-want +got):\n%s", diff)
	}
}

// The writes an operator's dead-letter commands and a run's record make:
// a failed key is named once, under one registry: layer (a review found
// "deadletter retry a: registry: retry dead letter a: …" and the record's
// key twice).
func TestRegistry_WriteFailures_SayEachLayerOnce(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	now := time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC)
	writes := map[string]struct {
		key   string
		write func(r *registry.Registry) error
	}{
		"RetryDeadLetter": {"queue:a", func(r *registry.Registry) error { return r.RetryDeadLetter(t.Context(), "a", now) }},
		"DropDeadLetter":  {"dead-letter:a", func(r *registry.Registry) error { return r.DropDeadLetter(t.Context(), "a") }},
		"RecordRun": {registry.LastRunKey, func(r *registry.Registry) error {
			return r.RecordRun(t.Context(), policy.RunSummary{RunID: "r1", Timestamp: "2026-11-25T16:00:00Z", Status: policy.RunSuccess}, now, "")
		}},
	}
	for name, w := range writes {
		f := registrytest.NewFaulty(registry.NewMemory(nil))
		registrytest.MustPut(t, f, registry.DeadLetterPair(policy.DeadLetter{QueueEntry: policy.QueueEntry{PolicyName: "a", SHA: "s", Operation: "add", CreatedAt: "2026-11-25T15:00:00Z"}, DeadAt: "2026-11-25T15:30:00Z"}))
		f.FailKeys(map[string]error{w.key: boom})
		err := w.write(registry.New(f))
		if !errors.Is(err, boom) || strings.Count(err.Error(), "registry: ") != 1 || strings.Count(err.Error(), w.key) > 1 {
			t.Errorf("%s: %v; want boom, under one registry: layer, naming %s at most once", name, err, w.key)
		}
		if part := repeatedLayer(err.Error()); part != "" {
			t.Errorf("%s: %q says %q twice", name, err, part)
		}
	}
}

// A fileNo is bounded in its JSON encoding, not its bytes: 200 control
// characters (each "\u0001" in JSON, six bytes) are left to the value.
// Review: the bound counted bytes (256), and such a fileNo made 1,200
// bytes of metadata, a pair KV refuses every run.
func TestQueuePair_FileNoOfEscapedCharacters_Fits(t *testing.T) {
	t.Parallel()
	fileNo := strings.Repeat("\x01", 200)
	q := policy.QueueEntry{PolicyName: "a", SHA: strings.Repeat("a", 40), Operation: "update", CreatedAt: "2025-03-01T16:00:00Z", FileNo: fileNo, AttemptID: "r1"}
	d := policy.DeadLetter{QueueEntry: q, DeadAt: "2025-03-02T16:00:00Z", Reason: "three failures"}
	for _, p := range []registry.Pair{registry.QueuePair(q), registry.DeadLetterPair(d)} {
		if err := registry.CheckPair(p); err != nil {
			t.Errorf("%s: CheckPair: %v (metadata %d bytes)", p.Key, err, len(p.Metadata))
		}
	}
}
