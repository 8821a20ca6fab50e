package mirror_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/unicode/norm"

	"github.com/knue/syncjob/internal/mirror"
)

func TestDrift(t *testing.T) {
	t.Parallel()
	const p = mirror.DefaultPrefix
	ok := mirror.Want{SHA: "s1", UploadedSHA: "s1", ETag: "e1"}
	key := func(name string) string { return mirror.Key(p, name) }
	tests := []struct {
		name   string
		want   map[string]mirror.Want
		listed []mirror.Listed
		repair mirror.Repairs
	}{
		{
			name:   "nothing to do",
			want:   map[string]mirror.Want{"a": ok},
			listed: []mirror.Listed{{Key: key("a"), ETag: `"E1"`}},
		},
		{
			name: "folder markers (empty, the key ending in /) are left alone; a non-empty one is unsafe",
			want: map[string]mirror.Want{"a": ok},
			listed: []mirror.Listed{
				{Key: key("a"), ETag: "e1"}, {Key: p, Size: 0}, {Key: p + "가/", Size: 0}, {Key: p + "x/", Size: 3},
			},
			repair: mirror.Repairs{Unsafe: []string{p + "x/"}},
		},
		{
			name:   "a key spelling a wanted policy's in NFD is an alias, not deleted by Drift (on R2 the same object: the run tells after its uploads); the NFC key, unlisted, is uploaded",
			want:   map[string]mirror.Want{"학칙": ok},
			listed: []mirror.Listed{{Key: norm.NFD.String(key("학칙")), ETag: "e1"}},
			repair: mirror.Repairs{
				Upload:  []mirror.Repair{{PolicyName: "학칙", Key: key("학칙"), Reason: mirror.Missing}},
				Aliases: []string{norm.NFD.String(key("학칙"))},
			},
		},
		{
			name:   "a kept want (an entry that does not decode): its object, missing, or listed in NFD, is left alone",
			want:   map[string]mirror.Want{"학칙": {Keep: true}, "규정": {Keep: true}},
			listed: []mirror.Listed{{Key: norm.NFD.String(key("학칙")), ETag: "e1"}},
			repair: mirror.Repairs{},
		},
		{
			name:   "missing object",
			want:   map[string]mirror.Want{"a": ok, "b": ok},
			listed: []mirror.Listed{{Key: key("a"), ETag: "e1"}},
			repair: mirror.Repairs{Upload: []mirror.Repair{{PolicyName: "b", Key: key("b"), Reason: mirror.Missing}}},
		},
		{
			name:   "stale: the recorded upload is of an older version",
			want:   map[string]mirror.Want{"a": {SHA: "s2", UploadedSHA: "s1", ETag: "e1"}},
			listed: []mirror.Listed{{Key: key("a"), ETag: "e1"}},
			repair: mirror.Repairs{Upload: []mirror.Repair{{PolicyName: "a", Key: key("a"), Reason: mirror.Stale}}},
		},
		{
			name:   "edited by hand: the listed etag is not the recorded one",
			want:   map[string]mirror.Want{"a": ok},
			listed: []mirror.Listed{{Key: key("a"), ETag: "e2"}},
			repair: mirror.Repairs{Upload: []mirror.Repair{{PolicyName: "a", Key: key("a"), Reason: mirror.Edited}}},
		},
		{
			name:   "nothing recorded: the mirror turned on for an existing registry",
			want:   map[string]mirror.Want{"a": {SHA: "s1"}, "b": {SHA: "s1"}},
			listed: []mirror.Listed{{Key: key("a"), ETag: "e1"}},
			repair: mirror.Repairs{Upload: []mirror.Repair{
				{PolicyName: "a", Key: key("a"), Reason: mirror.Unrecorded},
				{PolicyName: "b", Key: key("b"), Reason: mirror.Missing},
			}},
		},
		{
			name: "foreign under the prefix: a deleted policy's object, strays, nested",
			want: map[string]mirror.Want{"a": ok},
			listed: []mirror.Listed{
				{Key: key("a"), ETag: "e1"}, {Key: key("gone"), ETag: "x"}, {Key: p + "stray.txt"},
				{Key: p + "a/notes.md"}, {Key: p + "x/y/policy.md"}, {Key: p + "a/.policy.md.tmp-1"},
			},
			repair: mirror.Repairs{Delete: []string{p + "a/.policy.md.tmp-1", p + "a/notes.md", key("gone"), p + "stray.txt", p + "x/y/policy.md"}},
		},
		{
			name: "outside the prefix: ignored",
			want: map[string]mirror.Want{"a": ok},
			listed: []mirror.Listed{
				{Key: key("a"), ETag: "e1"}, {Key: "other/b/policy.md"}, {Key: "policies-old/c/policy.md"}, {Key: "policies"},
			},
		},
		{
			name: "foreign keys no target may delete: reported apart, not in a batch",
			want: map[string]mirror.Want{},
			listed: []mirror.Listed{
				{Key: p + "../escape/policy.md"}, {Key: p + "a//policy.md"}, {Key: p + "bad\xff/policy.md"}, {Key: key("ok")},
			},
			repair: mirror.Repairs{
				Delete: []string{key("ok")},
				Unsafe: []string{p + "../escape/policy.md", p + "a//policy.md", p + "bad\xff/policy.md"},
			},
		},
		{
			name:   "empty mirror, empty head",
			want:   map[string]mirror.Want{},
			listed: nil,
		},
		{
			name:   "a listing that repeats a key deletes it once",
			want:   map[string]mirror.Want{},
			listed: []mirror.Listed{{Key: key("z")}, {Key: key("z")}},
			repair: mirror.Repairs{Delete: []string{key("z")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mirror.Drift(p, tt.want, tt.listed)
			if d := cmp.Diff(tt.repair, got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
			if got.Empty() != tt.repair.Empty() {
				t.Fatalf("Empty() = %v", got.Empty())
			}
		})
	}
}
