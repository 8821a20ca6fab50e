package registrytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// Opener returns a fresh, empty Store that reads the time from now.
// RunContract closes it at the end of each subtest.
type Opener func(t *testing.T, now func() time.Time) registry.Store

// Epoch is the time a contract clock starts at: a whole second, so TTL
// expirations are exact on backends that keep seconds.
var Epoch = time.Date(2025, 3, 1, 16, 0, 0, 0, time.UTC)

// OddKeys are keys a real regulations repository produces (Hangul with
// spaces, ':', '(', U+2024 ONE DOT LEADER) and keys that break naive URL or
// path handling. The NFC and NFD spellings of one name are distinct keys.
var OddKeys = []string{
	"policy:학칙",
	"policy:교원 인사 규정",
	"policy:규정:부칙",
	"policy:학칙(2024. 3. 1.)",
	"policy:제1\u20242조",
	"policy:\ud55c\uad6d",                         // 한국, NFC
	"policy:\u1112\u1161\u11ab\u1100\u116e\u11a8", // 한국, NFD
	"policy:a/b",
	"policy:?x=1&y=2#frag",
	"policy:100% 50%2F",
	"policy:plus+sign",
	"policy:.",
	"policy:..",
	"policy: leading and trailing ",
	"policy:emoji😀",
	"queue:학칙",
	"dead-letter:교원 인사 규정",
	"metadata:sync:run:8259999999999:run-1",
}

// RunContract checks that the stores open returns keep the registry.Store
// contract. Run it against every backend.
func RunContract(t *testing.T, open Opener) {
	t.Helper()
	for _, c := range contract {
		t.Run(c.name, func(t *testing.T) {
			clock := NewClock(Epoch)
			s := open(t, clock.Now)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			c.test(t, s, clock)
		})
	}
}

// contract is every clause of the registry.Store contract, in order, each
// run on a fresh store.
var contract = []struct {
	name string
	test func(t *testing.T, s registry.Store, clock *Clock)
}{
	{"Get_Absent_NotFound", contractGetAbsentNotFound},
	{"RoundTrip_OddKeys", contractRoundTripOddKeys},
	{"NFDAndNFC_DistinctKeys", contractNFDAndNFCDistinctKeys},
	{"Put_Overwrite_ReplacesValueMetadataAndTTL", contractPutOverwriteReplacesValueMetadataAndTTL},
	{"EmptyValue_RoundTrips", contractEmptyValueRoundTrips},
	{"List_SortedBytewise", contractListSortedBytewise},
	{"List_PrefixIsolation", contractListPrefixIsolation},
	{"Metadata_RoundTrips", contractMetadataRoundTrips},
	{"TTL_ExpiresWithClock", contractTTLExpiresWithClock},
	{"TTL_RewriteAfterExpiry", contractTTLRewriteAfterExpiry},
	{"Limits_FailOnlyTheBreakingKey", contractLimitsFailOnlyTheBreakingKey},
	{"Put_AllBreakLimits_NoRequest", contractPutAllBreakLimitsNoRequest},
	{"Put_DuplicateKey_FailsThatKeyOnly", contractPutDuplicateKeyFailsThatKeyOnly},
	{"PutAndDelete_Empty_NilOutcome", contractPutAndDeleteEmptyNilOutcome},
	{"Delete_AbsentKey_Succeeds", contractDeleteAbsentKeySucceeds},
	{"Delete_ExactKeyOnly", contractDeleteExactKeyOnly},
	{"Delete_InvalidKey_FailsAlone", contractDeleteInvalidKeyFailsAlone},
	{"Get_InvalidKey_TooLarge", contractGetInvalidKeyTooLarge},
	{"Values_NotAliased", contractValuesNotAliased},
	{"CancelledContext_NothingWritten", contractCancelledContextNothingWritten},
	{"Requests_Counted", contractRequestsCounted},
	{"Close_Twice_ThenClosed", contractCloseTwiceThenClosed},
	{"Concurrent_Batches", contractConcurrentBatches},
}

func contractGetAbsentNotFound(t *testing.T, s registry.Store, _ *Clock) {
	_, err := s.Get(t.Context(), "policy:absent")
	if !errors.Is(err, policy.ErrNotFound) {
		t.Fatalf("Get absent: err = %v, want policy.ErrNotFound", err)
	}
}

func contractRoundTripOddKeys(t *testing.T, s registry.Store, _ *Clock) {
	var pairs []registry.Pair
	want := map[string]string{}
	for i, k := range OddKeys {
		v := fmt.Sprintf("value %d of %s", i, k)
		pairs = append(pairs, registry.Pair{Key: k, Value: []byte(v)})
		want[k] = v
	}
	MustPut(t, s, pairs...)
	got := map[string]string{}
	for _, k := range OddKeys {
		got[k] = string(MustGet(t, s, k))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get after Put (-want +got):\n%s", diff)
	}
	listed := map[string]string{}
	for _, it := range MustList(t, s, "") {
		listed[it.Key] = string(MustValue(t, s, it))
	}
	if diff := cmp.Diff(want, listed); diff != "" {
		t.Errorf("List after Put (-want +got):\n%s", diff)
	}
}

func contractNFDAndNFCDistinctKeys(t *testing.T, s registry.Store, _ *Clock) {
	nfc, nfd := "policy:\ud55c", "policy:\u1112\u1161\u11ab"
	MustPut(t, s, registry.Pair{Key: nfc, Value: []byte("nfc")})
	if _, err := s.Get(t.Context(), nfd); !errors.Is(err, policy.ErrNotFound) {
		t.Fatalf("Get NFD after putting NFC: err = %v, want policy.ErrNotFound", err)
	}
	MustPut(t, s, registry.Pair{Key: nfd, Value: []byte("nfd")})
	got := []string{string(MustGet(t, s, nfc)), string(MustGet(t, s, nfd))}
	if diff := cmp.Diff([]string{"nfc", "nfd"}, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{nfd, nfc}, Keys(MustList(t, s, "policy:"))); diff != "" {
		t.Errorf("List keys, bytewise (-want +got):\n%s", diff)
	}
}

func contractPutOverwriteReplacesValueMetadataAndTTL(t *testing.T, s registry.Store, clock *Clock) {
	MustPut(t, s, registry.Pair{Key: "k", Value: []byte("old"), Metadata: json.RawMessage(`{"sha":"a"}`), TTL: time.Hour})
	MustPut(t, s, registry.Pair{Key: "k", Value: []byte("new")})
	items := MustList(t, s, "k")
	if len(items) != 1 {
		t.Fatalf("List = %d items, want 1", len(items))
	}
	if got := string(MustValue(t, s, items[0])); got != "new" {
		t.Errorf("value = %q, want %q", got, "new")
	}
	if len(items[0].Metadata) != 0 {
		t.Errorf("metadata = %s, want none", items[0].Metadata)
	}
	if !items[0].Expiration.IsZero() {
		t.Errorf("expiration = %v, want none", items[0].Expiration)
	}
	clock.Advance(2 * time.Hour)
	if got := string(MustGet(t, s, "k")); got != "new" {
		t.Errorf("value after the old TTL = %q, want %q", got, "new")
	}
}

func contractEmptyValueRoundTrips(t *testing.T, s registry.Store, _ *Clock) {
	MustPut(t, s, registry.Pair{Key: "empty", Value: nil})
	if got := MustGet(t, s, "empty"); len(got) != 0 {
		t.Errorf("Get = %q, want empty", got)
	}
	items := MustList(t, s, "empty")
	if len(items) != 1 {
		t.Fatalf("List = %d items, want 1", len(items))
	}
	if got := MustValue(t, s, items[0]); len(got) != 0 {
		t.Errorf("listed value = %q, want empty", got)
	}
}

func contractListSortedBytewise(t *testing.T, s registry.Store, _ *Clock) {
	keys := []string{"policy:가", "policy:a", "policy:Z", "policy:", "policy:a:b", "policy:ab", "policy:\u1100", "policy: ", "policy:~"}
	var pairs []registry.Pair
	for _, k := range keys {
		pairs = append(pairs, registry.Pair{Key: k, Value: []byte(k)})
	}
	MustPut(t, s, pairs...)
	want := append([]string(nil), keys...)
	sort.Strings(want)
	if diff := cmp.Diff(want, Keys(MustList(t, s, "policy:"))); diff != "" {
		t.Errorf("List keys (-want +got):\n%s", diff)
	}
}

func contractListPrefixIsolation(t *testing.T, s registry.Store, _ *Clock) {
	keys := []string{"policy:", "policy:x", "policy:x:y", "policy:xa", "policyx", "policy", "queue:x", "dead-letter:x", "metadata:sync:lastRun", "metadata:sync:run:1:a", "metadata:sync:runner"}
	var pairs []registry.Pair
	for _, k := range keys {
		pairs = append(pairs, registry.Pair{Key: k, Value: []byte(k)})
	}
	MustPut(t, s, pairs...)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"policy:", []string{"policy:", "policy:x", "policy:x:y", "policy:xa"}},
		{"policy:x", []string{"policy:x", "policy:x:y", "policy:xa"}},
		{"policy:x:", []string{"policy:x:y"}},
		{"policy:y", nil},
		{"queue:", []string{"queue:x"}},
		{"dead-letter:", []string{"dead-letter:x"}},
		{"metadata:sync:run:", []string{"metadata:sync:run:1:a"}},
		{"Policy:", nil},
		{"", []string{"dead-letter:x", "metadata:sync:lastRun", "metadata:sync:run:1:a", "metadata:sync:runner", "policy", "policy:", "policy:x", "policy:x:y", "policy:xa", "policyx", "queue:x"}},
	} {
		items := MustList(t, s, tc.prefix)
		if diff := cmp.Diff(tc.want, Keys(items)); diff != "" {
			t.Errorf("List(%q) keys (-want +got):\n%s", tc.prefix, diff)
		}
		for _, it := range items {
			if got := string(MustValue(t, s, it)); got != it.Key {
				t.Errorf("List(%q): value of %q = %q", tc.prefix, it.Key, got)
			}
		}
	}
}

func contractMetadataRoundTrips(t *testing.T, s registry.Store, _ *Clock) {
	meta := map[string]string{
		"policy:a": `{"sha":"0123456789abcdef0123456789abcdef01234567"}`,
		"policy:b": `{"title":"학칙 (2024)","n":3,"nested":{"ok":true},"list":[1,"two",null]}`,
		"policy:c": `"just a string"`,
	}
	var pairs []registry.Pair
	for k, m := range meta {
		pairs = append(pairs, registry.Pair{Key: k, Value: []byte("v"), Metadata: json.RawMessage(m)})
	}
	pairs = append(pairs, registry.Pair{Key: "policy:d", Value: []byte("v")})
	MustPut(t, s, pairs...)
	got := map[string]any{}
	for _, it := range MustList(t, s, "policy:") {
		if len(it.Metadata) == 0 {
			got[it.Key] = nil
			continue
		}
		var v any
		if err := json.Unmarshal(it.Metadata, &v); err != nil {
			t.Fatalf("metadata of %s: %v", it.Key, err)
		}
		got[it.Key] = v
	}
	want := map[string]any{"policy:d": nil}
	for k, m := range meta {
		var v any
		if err := json.Unmarshal([]byte(m), &v); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed metadata (-want +got):\n%s", diff)
	}
}

func contractTTLExpiresWithClock(t *testing.T, s registry.Store, clock *Clock) {
	MustPut(t, s,
		registry.Pair{Key: "metadata:sync:run:1:a", Value: []byte("short"), TTL: time.Minute},
		registry.Pair{Key: "metadata:sync:run:2:b", Value: []byte("long"), TTL: 90 * 24 * time.Hour},
		registry.Pair{Key: "metadata:sync:run:3:c", Value: []byte("forever")},
	)
	want := map[string]time.Time{
		"metadata:sync:run:1:a": Epoch.Add(time.Minute),
		"metadata:sync:run:2:b": Epoch.Add(90 * 24 * time.Hour),
		"metadata:sync:run:3:c": {},
	}
	got := map[string]time.Time{}
	for _, it := range MustList(t, s, "metadata:sync:run:") {
		got[it.Key] = it.Expiration
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("expirations (-want +got):\n%s", diff)
	}

	clock.Advance(59 * time.Second)
	MustGet(t, s, "metadata:sync:run:1:a")
	clock.Advance(time.Second)
	if _, err := s.Get(t.Context(), "metadata:sync:run:1:a"); !errors.Is(err, policy.ErrNotFound) {
		t.Fatalf("Get at its expiration: err = %v, want policy.ErrNotFound", err)
	}
	if diff := cmp.Diff([]string{"metadata:sync:run:2:b", "metadata:sync:run:3:c"}, Keys(MustList(t, s, "metadata:sync:run:"))); diff != "" {
		t.Errorf("List after 60s (-want +got):\n%s", diff)
	}
	// A write purges on some backends; the expired key must stay gone.
	MustPut(t, s, registry.Pair{Key: "other", Value: []byte("x")})
	if _, err := s.Get(t.Context(), "metadata:sync:run:1:a"); !errors.Is(err, policy.ErrNotFound) {
		t.Fatalf("Get after a write: err = %v, want policy.ErrNotFound", err)
	}

	clock.Advance(90 * 24 * time.Hour)
	if diff := cmp.Diff([]string{"metadata:sync:run:3:c"}, Keys(MustList(t, s, "metadata:sync:run:"))); diff != "" {
		t.Errorf("List after 90 days (-want +got):\n%s", diff)
	}
}

func contractTTLRewriteAfterExpiry(t *testing.T, s registry.Store, clock *Clock) {
	MustPut(t, s, registry.Pair{Key: "metadata:sync:lease", Value: []byte("a"), TTL: time.Minute})
	clock.Advance(time.Hour)
	MustPut(t, s, registry.Pair{Key: "metadata:sync:lease", Value: []byte("b"), TTL: time.Minute})
	if got := string(MustGet(t, s, "metadata:sync:lease")); got != "b" {
		t.Errorf("Get = %q, want %q", got, "b")
	}
}

func contractLimitsFailOnlyTheBreakingKey(t *testing.T, s registry.Store, _ *Clock) {
	key512 := "policy:" + strings.Repeat("가", (policy.MaxKeyBytes-len("policy:"))/3) + strings.Repeat("x", (policy.MaxKeyBytes-len("policy:"))%3)
	key513 := key512 + "x"
	meta1024 := json.RawMessage(`"` + strings.Repeat("m", policy.MaxMetadataBytes-2) + `"`)
	meta1025 := json.RawMessage(`"` + strings.Repeat("m", policy.MaxMetadataBytes-1) + `"`)
	good := []registry.Pair{
		{Key: "policy:ok1", Value: []byte("1")},
		{Key: key512, Value: []byte("512")},
		{Key: "policy:meta1024", Value: []byte("m"), Metadata: meta1024},
		{Key: "policy:ttl60", Value: []byte("t"), TTL: 60 * time.Second},
		{Key: "policy:ok2", Value: []byte("2")},
	}
	bad := []registry.Pair{
		{Key: key513, Value: []byte("513")},
		{Key: "policy:meta1025", Value: []byte("m"), Metadata: meta1025},
		{Key: "policy:metabad", Value: []byte("m"), Metadata: json.RawMessage(`{"sha":`)},
		{Key: "policy:ttl59", Value: []byte("t"), TTL: 59 * time.Second},
		{Key: "policy:ttlneg", Value: []byte("t"), TTL: -time.Minute},
		{Key: "policy:huge", Value: make([]byte, policy.MaxValueBytes+1)},
		{Key: "", Value: []byte("empty key")},
		{Key: ".", Value: []byte("dot")},
		{Key: "..", Value: []byte("dotdot")},
		{Key: "policy:\xff\xfe", Value: []byte("invalid utf-8")},
	}
	var batch []registry.Pair
	for i := range max(len(good), len(bad)) {
		if i < len(bad) {
			batch = append(batch, bad[i])
		}
		if i < len(good) {
			batch = append(batch, good[i])
		}
	}
	out := s.Put(t.Context(), batch)
	var wantFailed []string
	for _, p := range bad {
		wantFailed = append(wantFailed, p.Key)
		if err := out[p.Key]; !errors.Is(err, policy.ErrTooLarge) {
			t.Errorf("Put %q: err = %v, want policy.ErrTooLarge", trim(p.Key), err)
		}
	}
	if diff := cmp.Diff(sorted(wantFailed), sorted(mapKeys(out))); diff != "" {
		t.Errorf("failed keys (-want +got):\n%s", diff)
	}
	var wantLanded []string
	for _, p := range good {
		wantLanded = append(wantLanded, p.Key)
		if got := MustGet(t, s, p.Key); !bytes.Equal(got, p.Value) {
			t.Errorf("Get %q = %q, want %q", trim(p.Key), got, p.Value)
		}
	}
	if diff := cmp.Diff(sorted(wantLanded), Keys(MustList(t, s, ""))); diff != "" {
		t.Errorf("stored keys (-want +got):\n%s", diff)
	}
}

func contractPutAllBreakLimitsNoRequest(t *testing.T, s registry.Store, _ *Clock) {
	before := s.Usage().Requests
	out := s.Put(t.Context(), []registry.Pair{{Key: "", Value: []byte("x")}})
	if !errors.Is(out[""], policy.ErrTooLarge) {
		t.Errorf("Put empty key: outcome = %v, want policy.ErrTooLarge", out)
	}
	if got := s.Usage().Requests - before; got != 0 {
		t.Errorf("requests = %d, want 0 (refused before any request)", got)
	}
}

func contractPutDuplicateKeyFailsThatKeyOnly(t *testing.T, s registry.Store, _ *Clock) {
	out := s.Put(t.Context(), []registry.Pair{
		{Key: "policy:dup", Value: []byte("1")},
		{Key: "policy:ok", Value: []byte("ok")},
		{Key: "policy:dup", Value: []byte("2")},
	})
	if diff := cmp.Diff([]string{"policy:dup"}, mapKeys(out)); diff != "" {
		t.Errorf("failed keys (-want +got):\n%s", diff)
	}
	if !errors.Is(out["policy:dup"], registry.ErrDuplicateKey) {
		t.Errorf("err = %v, want registry.ErrDuplicateKey", out["policy:dup"])
	}
	if diff := cmp.Diff([]string{"policy:ok"}, Keys(MustList(t, s, ""))); diff != "" {
		t.Errorf("stored keys (-want +got):\n%s", diff)
	}
}

func contractPutAndDeleteEmptyNilOutcome(t *testing.T, s registry.Store, _ *Clock) {
	if out := s.Put(t.Context(), nil); out != nil {
		t.Errorf("Put(nil) = %v, want nil", out)
	}
	if out := s.Delete(t.Context(), nil); out != nil {
		t.Errorf("Delete(nil) = %v, want nil", out)
	}
	if out := s.Put(t.Context(), []registry.Pair{{Key: "a", Value: []byte("a")}}); out != nil {
		t.Errorf("Put = %v, want nil (all landed)", out)
	}
}

func contractDeleteAbsentKeySucceeds(t *testing.T, s registry.Store, _ *Clock) {
	if out := s.Delete(t.Context(), []string{"policy:absent", "queue:absent"}); out != nil {
		t.Errorf("Delete absent = %v, want nil", out)
	}
}

func contractDeleteExactKeyOnly(t *testing.T, s registry.Store, _ *Clock) {
	keys := []string{"policy:a", "policy:a:b", "policy:ab", "policy:a ", "policy:", "queue:a", "dead-letter:a"}
	var pairs []registry.Pair
	for _, k := range keys {
		pairs = append(pairs, registry.Pair{Key: k, Value: []byte(k)})
	}
	MustPut(t, s, pairs...)
	if out := s.Delete(t.Context(), []string{"policy:a", "policy:a", "queue:a"}); out != nil {
		t.Fatalf("Delete = %v, want nil", out)
	}
	want := []string{"dead-letter:a", "policy:", "policy:a ", "policy:a:b", "policy:ab"}
	if diff := cmp.Diff(want, Keys(MustList(t, s, ""))); diff != "" {
		t.Errorf("keys left (-want +got):\n%s", diff)
	}
	if out := s.Delete(t.Context(), []string{"policy:"}); out != nil {
		t.Fatalf("Delete = %v, want nil", out)
	}
	want = []string{"dead-letter:a", "policy:a ", "policy:a:b", "policy:ab"}
	if diff := cmp.Diff(want, Keys(MustList(t, s, ""))); diff != "" {
		t.Errorf("keys left after deleting the bare prefix key (-want +got):\n%s", diff)
	}
}

func contractDeleteInvalidKeyFailsAlone(t *testing.T, s registry.Store, _ *Clock) {
	MustPut(t, s, registry.Pair{Key: "policy:a", Value: []byte("a")})
	out := s.Delete(t.Context(), []string{"", "policy:a", strings.Repeat("k", policy.MaxKeyBytes+1)})
	if len(out) != 2 || !errors.Is(out[""], policy.ErrTooLarge) || !errors.Is(out[strings.Repeat("k", policy.MaxKeyBytes+1)], policy.ErrTooLarge) {
		t.Errorf("Delete outcome = %v, want the two bad keys failing with policy.ErrTooLarge", out)
	}
	if _, err := s.Get(t.Context(), "policy:a"); !errors.Is(err, policy.ErrNotFound) {
		t.Errorf("Get deleted key: err = %v, want policy.ErrNotFound", err)
	}
}

func contractGetInvalidKeyTooLarge(t *testing.T, s registry.Store, _ *Clock) {
	for _, k := range []string{"", strings.Repeat("k", policy.MaxKeyBytes+1)} {
		if _, err := s.Get(t.Context(), k); !errors.Is(err, policy.ErrTooLarge) {
			t.Errorf("Get(%q): err = %v, want policy.ErrTooLarge", trim(k), err)
		}
	}
}

func contractValuesNotAliased(t *testing.T, s registry.Store, _ *Clock) {
	v := []byte("original")
	m := json.RawMessage(`{"sha":"a"}`)
	MustPut(t, s, registry.Pair{Key: "k", Value: v, Metadata: m})
	copy(v, "XXXXXXXX")
	copy(m, `{"sha":"b"}`)
	got := MustGet(t, s, "k")
	if string(got) != "original" {
		t.Fatalf("Get = %q after the caller changed its slice, want %q", got, "original")
	}
	copy(got, "YYYYYYYY")
	if got := string(MustGet(t, s, "k")); got != "original" {
		t.Fatalf("Get = %q after a reader changed its result, want %q", got, "original")
	}
	items := MustList(t, s, "k")
	if len(items) != 1 || string(items[0].Metadata) != `{"sha":"a"}` {
		t.Fatalf("List = %+v, want metadata {\"sha\":\"a\"}", items)
	}
}

func contractCancelledContextNothingWritten(t *testing.T, s registry.Store, _ *Clock) {
	MustPut(t, s, registry.Pair{Key: "keep", Value: []byte("x")})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Get(ctx, "keep"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get: err = %v, want context.Canceled", err)
	}
	if _, err := s.List(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("List: err = %v, want context.Canceled", err)
	}
	out := s.Put(ctx, []registry.Pair{{Key: "a", Value: []byte("a")}, {Key: "b", Value: []byte("b")}})
	if len(out) != 2 || !errors.Is(out["a"], context.Canceled) || !errors.Is(out["b"], context.Canceled) {
		t.Errorf("Put outcome = %v, want every key failing with context.Canceled", out)
	}
	out = s.Delete(ctx, []string{"keep"})
	if len(out) != 1 || !errors.Is(out["keep"], context.Canceled) {
		t.Errorf("Delete outcome = %v, want keep failing with context.Canceled", out)
	}
	if diff := cmp.Diff([]string{"keep"}, Keys(MustList(t, s, ""))); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

func contractRequestsCounted(t *testing.T, s registry.Store, _ *Clock) {
	before := s.Usage().Requests
	MustPut(t, s, registry.Pair{Key: "a", Value: []byte("a")})
	MustGet(t, s, "a")
	MustList(t, s, "")
	if out := s.Delete(t.Context(), []string{"a"}); out != nil {
		t.Fatalf("Delete = %v", out)
	}
	if got := s.Usage().Requests - before; got < 4 {
		t.Errorf("requests for Put, Get, List, Delete = %d, want at least 4", got)
	}
}

func contractCloseTwiceThenClosed(t *testing.T, s registry.Store, _ *Clock) {
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Get(t.Context(), "a"); !errors.Is(err, registry.ErrClosed) {
		t.Errorf("Get after Close: err = %v, want registry.ErrClosed", err)
	}
	if out := s.Put(t.Context(), []registry.Pair{{Key: "a", Value: []byte("a")}}); !errors.Is(out["a"], registry.ErrClosed) {
		t.Errorf("Put after Close = %v, want registry.ErrClosed", out)
	}
}

func contractConcurrentBatches(t *testing.T, s registry.Store, _ *Clock) {
	const workers, perWorker = 8, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var pairs []registry.Pair
			for i := range perWorker {
				pairs = append(pairs, registry.Pair{Key: fmt.Sprintf("policy:%02d-%02d", w, i), Value: []byte{byte(w), byte(i)}})
			}
			if out := s.Put(t.Context(), pairs); out != nil {
				t.Errorf("worker %d: Put = %v", w, out)
			}
			if _, err := s.List(t.Context(), "policy:"); err != nil {
				t.Errorf("worker %d: List: %v", w, err)
			}
			if _, err := s.Get(t.Context(), pairs[0].Key); err != nil {
				t.Errorf("worker %d: Get: %v", w, err)
			}
		})
	}
	wg.Wait()
	if got := len(MustList(t, s, "policy:")); got != workers*perWorker {
		t.Errorf("List = %d keys, want %d", got, workers*perWorker)
	}
}

// MustPut writes pairs and fails the test unless every one landed.
func MustPut(t testing.TB, s registry.Store, pairs ...registry.Pair) {
	t.Helper()
	if out := s.Put(context.Background(), pairs); out != nil {
		t.Fatalf("Put: %v", out)
	}
}

// MustGet returns the value of key, failing the test on any error.
func MustGet(t testing.TB, s registry.Store, key string) []byte {
	t.Helper()
	v, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get %q: %v", key, err)
	}
	return v
}

// MustList lists prefix, failing the test on any error.
func MustList(t testing.TB, s registry.Store, prefix string) []registry.Item {
	t.Helper()
	items, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatalf("List %q: %v", prefix, err)
	}
	return items
}

// MustValue returns a listed item's value, getting it when the backend
// listed the key without it.
func MustValue(t testing.TB, s registry.Store, it registry.Item) []byte {
	t.Helper()
	if it.Value != nil {
		return it.Value
	}
	return MustGet(t, s, it.Key)
}

// Keys returns the keys of items, in order; nil for none.
func Keys(items []registry.Item) []string {
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return keys
}

func mapKeys(m map[string]error) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// trim shortens long keys in messages.
func trim(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s...(%d bytes)", s[:20], len(s))
	}
	return s
}
