package syncer_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/mirror"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
	"github.com/knue/syncjob/internal/syncer"
)

// What the soak test checks: what a head asks of the registry (by
// docs/design.md's "Policy files", through internal/policy), what the registry holds
// (read around every fault), and the invariants of docs/design.md "Invariants".

// view is what the invariants compare of an entry.
type view struct{ SHA, Path, Title string }

// headView is the registry a commit asks for.
type headView struct {
	commit  string
	names   map[string]bool // every policy name at the commit, skipped ones too
	want    map[string]view // each name's winner, when it is written
	skipped map[string]bool // names whose winner is empty or over the size limit: their entry is kept
}

// blobs caches what the invariants need of each blob (blobs never change).
type blobs map[string]string

func headOf(repo *githubtest.Repo, commit string, cache blobs, limit int64) headView {
	hv := headView{commit: commit, names: map[string]bool{}, want: map[string]view{}, skipped: map[string]bool{}}
	files := repo.Files(commit)
	byName := map[string][]string{}
	for p := range files {
		if policy.IsPolicyPath(p) {
			n := policy.NameOf(p)
			byName[n] = append(byName[n], p)
		}
	}
	for name, paths := range byName {
		hv.names[name] = true
		sort.Strings(paths) // bytewise: the first wins
		winner := paths[0]
		sha := files[winner]
		body, ok := cache[sha]
		if !ok {
			body = repo.ReadFile(commit, winner)
			cache[sha] = body
		}
		if len(body) == 0 || int64(len(body)) > limit {
			hv.skipped[name] = true
			continue
		}
		hv.want[name] = view{SHA: sha, Path: winner, Title: policy.Title([]byte(body), name)}
	}
	return hv
}

type snapshot struct {
	raw        map[string]string
	policies   map[string]policy.Entry
	queue      map[string]policy.QueueEntry
	dead       map[string]policy.DeadLetter
	lastCommit string
	bad        []string // keys whose value does not decode
}

// withoutExpiredLease is before less a released lease that is gone after:
// its key expires on its own (a TTL of 60 s once released) while the
// clock moves, which is no write of the run (a 45-minute soak found dry
// runs "writing" so).
func withoutExpiredLease(before, after map[string]string) map[string]string {
	v, ok := before[registry.LeaseKey]
	if _, still := after[registry.LeaseKey]; !ok || still || !strings.Contains(v, `"releasedAt"`) {
		return before
	}
	out := maps.Clone(before)
	delete(out, registry.LeaseKey)
	return out
}

func decodeSnapshot(raw map[string]string) snapshot {
	s := snapshot{raw: raw, policies: map[string]policy.Entry{}, queue: map[string]policy.QueueEntry{}, dead: map[string]policy.DeadLetter{}}
	for k, v := range raw {
		var err error
		switch {
		case strings.HasPrefix(k, registry.PolicyPrefix):
			var e policy.Entry
			err = json.Unmarshal([]byte(v), &e)
			s.policies[strings.TrimPrefix(k, registry.PolicyPrefix)] = e
		case strings.HasPrefix(k, registry.QueuePrefix):
			var q policy.QueueEntry
			err = json.Unmarshal([]byte(v), &q)
			s.queue[strings.TrimPrefix(k, registry.QueuePrefix)] = q
		case strings.HasPrefix(k, registry.DeadLetterPrefix):
			var d policy.DeadLetter
			err = json.Unmarshal([]byte(v), &d)
			s.dead[strings.TrimPrefix(k, registry.DeadLetterPrefix)] = d
		case k == registry.LastCommitKey:
			s.lastCommit = strings.TrimSpace(v)
		}
		if err != nil {
			s.bad = append(s.bad, k)
		}
	}
	sort.Strings(s.bad)
	return s
}

func views(entries map[string]policy.Entry) map[string]view {
	out := make(map[string]view, len(entries))
	for n, e := range entries {
		out[n] = view{SHA: e.SHA, Path: e.Path, Title: e.Title}
	}
	return out
}

// Kinds of violation.
const (
	vDeleted    = "1 deleted a policy the head still has"
	vUnqueued   = "2 policy changed without its queue entry"
	vForeignKey = "3 key outside our prefixes"
	vSuccess    = "4 exit 0 but registry != head"
	vHeldBack   = "4h a dead letter holds back the head's version, and the run does not say so (exit 0, or 3 not naming it)"
	vPartial    = "4p exit 3 but registry != head beyond the named policies"
	vDryRun     = "dry run wrote"
	vUndecoded  = "value does not decode"
	vConverge   = "5 clean run did not converge"
	vNoText     = "M1 policy published without its object in the mirror"
	vMirror     = "M2 exit 0 but the mirror != the registry"
)

// checkMirror is the content mirror's invariants (-soak.mirror), over the
// registry after a run and the mirror's objects by key: whatever the run
// did, every policy the registry publishes has an object under its key
// (uploads come before the registry's writes, an object goes after its
// entry); and after a run that exits 0, the mirror is the registry: an
// object per policy, the one its entry records (contentEtag, sha), and no
// other under the prefix.
func checkMirror(after snapshot, objs map[string]mirror.Object, success bool) []violation {
	var vs []violation
	for _, name := range slices.Sorted(maps.Keys(after.policies)) {
		e := after.policies[name]
		o, ok := objs[mirror.Key(prefix, name)]
		switch {
		case !ok && mirror.ValidateKey(prefix, mirror.Key(prefix, name)) == nil:
			vs = append(vs, violation{vNoText, fmt.Sprintf("policy:%s (sha %s) has no object", name, short(e.SHA))})
		case !success:
		case !ok:
			vs = append(vs, violation{vMirror, fmt.Sprintf("policy:%s: no object (its key cannot be mirrored)", name)})
		case e.ContentETag != mirror.ETagOf(o.Body) || o.Metadata[mirror.MetaSHA] != e.SHA:
			vs = append(vs, violation{vMirror, fmt.Sprintf("policy:%s records sha %s, ETag %s; its object holds sha %s, ETag %s", name, short(e.SHA), e.ContentETag, short(o.Metadata[mirror.MetaSHA]), mirror.ETagOf(o.Body))})
		}
	}
	if !success {
		return vs
	}
	for _, key := range slices.Sorted(maps.Keys(objs)) {
		name, ok := mirror.PolicyNameOf(prefix, key)
		if _, published := after.policies[name]; !ok || !published {
			vs = append(vs, violation{vMirror, fmt.Sprintf("object %s: no policy publishes it", key)})
		}
	}
	return vs
}

type violation struct{ kind, detail string }

var ourPrefixes = []string{registry.PolicyPrefix, registry.QueuePrefix, registry.DeadLetterPrefix, "metadata:sync:"}

// expected is the registry head asks for, given what it held before the
// run: a skipped winner keeps the entry it had (or its absence).
func expected(hv headView, before snapshot) map[string]view {
	exp := maps.Clone(hv.want)
	for name := range hv.skipped {
		if e, ok := before.policies[name]; ok {
			exp[name] = view{SHA: e.SHA, Path: e.Path, Title: e.Title}
		}
	}
	return exp
}

// checkRun checks the invariants that hold after every run (docs/design.md "One
// run", "Invariants"), before and after being the whole registry around it:
//
//  1. a policy the registry had and the head still has is not deleted;
//  2. a policy whose sha the run changed (or added) has its queue entry
//     at that sha ("announce before publish"; a path-only move needs none);
//  3. every key is under policy:, queue:, dead-letter: or metadata:sync:;
//  4. exit 0 means the registry is the head (names, shas, paths, titles;
//     a skipped winner keeps its entry) and lastCommit the head commit;
//     exit 3 means that too, but for the policies the run names as failed,
//     skipped or held back; a version only a dead letter holds back must
//     be named (4h).
//
// Besides: a dry run writes nothing, and every value decodes. Invariant 5
// (one clean run converges) is checked by converge.
func checkRun(hv headView, before, after snapshot, res syncer.Result, err error, dry bool) []violation {
	var vs []violation
	add := func(kind, format string, args ...any) { vs = append(vs, violation{kind, fmt.Sprintf(format, args...)}) }
	for _, k := range after.bad {
		add(vUndecoded, "%s = %q", k, after.raw[k])
	}
	for _, name := range slices.Sorted(maps.Keys(before.policies)) {
		if _, still := after.policies[name]; hv.names[name] && !still {
			add(vDeleted, "policy:%s (was %s at %q) is gone; the head has it", name, short(before.policies[name].SHA), before.policies[name].Path)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(after.policies)) {
		e := after.policies[name]
		if b, ok := before.policies[name]; ok && b.SHA == e.SHA {
			continue // unchanged, or a path-only move: no queue entry needed
		}
		q, ok := after.queue[name]
		if !ok || q.SHA != e.SHA {
			was := "absent"
			if b, ok := before.policies[name]; ok {
				was = short(b.SHA)
			}
			qs := "absent"
			if ok {
				qs = fmt.Sprintf("sha %s op %s retries %d", short(q.SHA), q.Operation, q.RetryCount)
			}
			if d, dead := after.dead[name]; dead {
				qs += fmt.Sprintf("; dead-letter sha %s", short(d.SHA))
			}
			add(vUnqueued, "policy:%s %s -> %s, queue:%s %s", name, was, short(e.SHA), name, qs)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after.raw)) {
		if !slices.ContainsFunc(ourPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			add(vForeignKey, "%q", k)
		}
	}
	if dry {
		if diff := cmp.Diff(withoutExpiredLease(before.raw, after.raw), after.raw); diff != "" {
			add(vDryRun, "(-before +after):\n%s", diff)
		}
		return vs
	}
	exp, got := expected(hv, before), views(after.policies)
	switch {
	case err == nil:
		diff := cmp.Diff(exp, got)
		held := heldBack(hv, after, exp, got)
		switch {
		case diff == "" && after.lastCommit == hv.commit:
		case after.lastCommit == hv.commit && len(held) == len(differing(exp, got)):
			add(vHeldBack, "held back %v; policies (-head +registry):\n%s", held, diff)
		default:
			add(vSuccess, "lastCommit %s, head %s; held back by dead letters %v; policies (-head +registry):\n%s", short(after.lastCommit), short(hv.commit), held, diff)
		}
	case errors.Is(err, syncer.ErrPartial):
		named := map[string]bool{}
		for _, f := range res.Summary.Failures {
			named[f.PolicyName] = true
		}
		for _, s := range slices.Concat(res.Summary.Skipped, res.Summary.HeldBack) {
			named[s.PolicyName] = true
		}
		for n := range named {
			delete(exp, n)
			delete(got, n)
		}
		diff := cmp.Diff(exp, got)
		held := heldBack(hv, after, exp, got)
		switch {
		case diff == "":
		case len(held) == len(differing(exp, got)):
			add(vHeldBack, "exit 3 naming %v, but not the held back %v; policies (-head +registry):\n%s", slices.Sorted(maps.Keys(named)), held, diff)
		default:
			add(vPartial, "named %v; held back by dead letters %v; policies (-head +registry):\n%s", slices.Sorted(maps.Keys(named)), held, diff)
		}
	}
	return vs
}

// differing are the names whose entry differs between exp and got.
func differing(exp, got map[string]view) []string {
	var out []string
	for n, e := range exp {
		if g, ok := got[n]; !ok || g != e {
			out = append(out, n)
		}
	}
	for n := range got {
		if _, ok := exp[n]; !ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// heldBack are the differing names a dead letter holds back: it gave up
// on the very version (or the delete) the head asks for.
func heldBack(hv headView, after snapshot, exp, got map[string]view) []string {
	var out []string
	for _, n := range differing(exp, got) {
		d, dead := after.dead[n]
		w, want := hv.want[n]
		if dead && ((want && d.Operation != policy.OpDelete && d.SHA == w.SHA) || (!want && d.Operation == policy.OpDelete)) {
			out = append(out, n)
		}
	}
	return out
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	if sha == "" {
		return "-"
	}
	return sha
}

// exitCode maps a run's error to cmd/syncjob's exit codes.
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, differ.ErrRefused):
		return 4
	case errors.Is(err, syncer.ErrPartial):
		return 3
	}
	return 1
}
