package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/strs"
)

// Policies returns every policy:{name} entry by name (the key without its
// prefix: the policyName, or the title of a legacy v1 entry, whose value has
// no policyName and no sha). Values that do not decode are returned in
// problems, by key, rather than failing the read; err is for the read itself.
//
// A backend that lists without values (Cloudflare) costs one List request
// per page of keys: an entry is built from its key's metadata when that is
// complete (see PolicyPair), and its value is read only otherwise (legacy or
// hand-written keys, metadata dropped for size). The listing is read a page
// at a time (PageLister) and an entry's strings kept in shared chunks, not
// the listed keys (docs/bench.md, "A full run's memory").
func (r *Registry) Policies(ctx context.Context) (entries map[string]policy.Entry, problems map[string]error, err error) {
	return r.PoliciesSharing(ctx, nil)
}

// Share returns, for a listed entry's path and sha, equal strings the
// caller already holds ("" for one it does not): a full run's head tree
// holds the path and sha of every policy that did not change.
type Share func(path, sha string) (sharedPath, sharedSHA string)

// PoliciesSharing is Policies whose entries built from metadata take
// their paths and shas from share when it holds them, and copy them only
// otherwise: an entry then holds no string of its own when it is what the
// head has (200,000 policies: a full run's largest live heap 95 MB → 84;
// docs/bench.md, "A full run's memory"). share is called from the
// listing's goroutine; nil shares nothing.
func (r *Registry) PoliciesSharing(ctx context.Context, share Share) (entries map[string]policy.Entry, problems map[string]error, err error) {
	entries = map[string]policy.Entry{}
	s := entryStrs{share: share}
	err = r.listPages(ctx, PolicyPrefix, func(items []Item) error {
		for _, it := range items {
			name := strings.TrimPrefix(it.Key, PolicyPrefix)
			if it.Value == nil {
				if e, ok := entryFromMetadata(it, &s); ok {
					entries[e.PolicyName] = e // not name: the listed key is not kept
					continue
				}
				filled, found, err := r.fill(ctx, it)
				if err != nil {
					return err
				}
				if !found {
					continue // gone since it was listed
				}
				it = filled
			}
			var e policy.Entry
			if err := decodeObject(it.Value, &e); err != nil {
				if problems == nil {
					problems = make(map[string]error)
				}
				problems[it.Key] = fmt.Errorf("registry: decode %s: %w", it.Key, err)
				continue
			}
			entries[name] = e
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("registry: read policies: %w", err)
	}
	return entries, problems, nil
}

// entryFromMetadata returns the Entry a listed policy key's metadata
// describes, when it describes all of it: written by PolicyPair, with path,
// title and lastUpdated, and no legacy fields. Its strings are taken from
// s, not from the listed key.
func entryFromMetadata(it Item, s *entryStrs) (policy.Entry, bool) {
	var m policyMetadata
	if decodeObject(it.Metadata, &m) != nil || m.Legacy || m.Path == nil || m.Title == nil || m.LastUpdated == nil {
		return policy.Entry{}, false
	}
	path, sha := s.pathAndSHA(*m.Path, m.SHA)
	name := viewIn(path, strings.TrimPrefix(it.Key, PolicyPrefix), &s.Chunks)
	title := name
	if *m.Title != name {
		title = s.Copy(*m.Title)
	}
	return policy.Entry{
		PolicyName:  name,
		Title:       title,
		Status:      policy.StatusActive,
		LastUpdated: s.lastUpdated(*m.LastUpdated),
		SHA:         sha,
		Path:        path,
		ContentETag: s.Copy(m.ContentETag),
	}, true
}

// viewIn returns sub as a slice of s when s holds it (a policy's name is
// its file's name: "a/학칙.md" holds "학칙"), else as a copy in c. A
// full run then keeps each name once, in its path (200,000 policies: its
// largest live heap 101 MB → 95).
func viewIn(s, sub string, c *strs.Chunks) string {
	if i := strings.LastIndex(s, sub); i >= 0 {
		return s[i : i+len(sub)]
	}
	return c.Copy(sub)
}

// entryStrs keeps the strings of a full run's listed entries in shared
// chunks, and one lastUpdated for the many entries a run wrote at once
// (docs/bench.md, "A full run's memory").
type entryStrs struct {
	strs.Chunks
	last  string
	share Share // nil: none
}

// pathAndSHA returns path and sha as the strings share holds, when they
// are equal to them, else as copies.
func (s *entryStrs) pathAndSHA(path, sha string) (string, string) {
	var p, h string
	if s.share != nil {
		p, h = s.share(path, sha)
	}
	if p != path {
		p = s.Copy(path)
	}
	if h != sha {
		h = s.Copy(sha)
	}
	return p, h
}

// lastUpdated returns t, as the string of the entry before when equal.
func (s *entryStrs) lastUpdated(t string) string {
	if t != s.last {
		s.last = s.Copy(t)
	}
	return s.last
}

// CountPolicies returns how many policy:{name} keys the registry holds,
// from a listing (no value is read), and the names of those whose listed
// value does not decode (a store that lists values: the registry file,
// where one may be damaged; on Workers KV a listing holds none).
func (r *Registry) CountPolicies(ctx context.Context) (n int, unreadable []string, err error) {
	items, err := r.store.List(ctx, PolicyPrefix)
	if err != nil {
		return 0, nil, fmt.Errorf("registry: count policies: %w", err)
	}
	for _, it := range items {
		var e policy.Entry
		if it.Value != nil && decodeObject(it.Value, &e) != nil {
			unreadable = append(unreadable, strings.TrimPrefix(it.Key, PolicyPrefix))
		}
	}
	return len(items), unreadable, nil
}

// Policy returns the entry of one policy; present is false when the key is
// absent. A value that does not decode is a *DecodeError (present is then
// true); any other error means the read failed.
func (r *Registry) Policy(ctx context.Context, name string) (e policy.Entry, present bool, err error) {
	raw, err := r.store.Get(ctx, PolicyKey(name))
	if errors.Is(err, policy.ErrNotFound) {
		return policy.Entry{}, false, nil
	}
	if err != nil {
		return policy.Entry{}, false, fmt.Errorf("registry: read policy: %w", err)
	}
	if err := decodeObject(raw, &e); err != nil {
		var bad *DecodeError
		return policy.Entry{}, true, bad.add(PolicyKey(name), err)
	}
	return e, true, nil
}

// maxManyKeys is how many keys one GetMany asks for: Cloudflare's bulk get
// takes up to 100.
const maxManyKeys = 100

// Entries reads the policy entries of names (policy:{name}): Select
// without dead letters.
func (r *Registry) Entries(ctx context.Context, names []string) (entries map[string]policy.Entry, problems map[string]error, err error) {
	sel, err := r.Select(ctx, names, nil)
	return sel.Entries, sel.Problems, err
}

// Selected is what Select read.
type Selected struct {
	Entries     map[string]policy.Entry      // by name; absent names absent
	DeadLetters map[string]policy.DeadLetter // by name; absent names absent
	Problems    map[string]error             // values that do not decode, by key
}

// Select reads the policy entries of names and the dead letters of
// deadNames in as few requests as the store allows (ManyGetter: 100 keys a
// request): what an incremental run needs of the registry, instead of
// listing all of it.
func (r *Registry) Select(ctx context.Context, names, deadNames []string) (Selected, error) {
	sel := Selected{Entries: make(map[string]policy.Entry, len(names)), DeadLetters: map[string]policy.DeadLetter{}}
	keys := make([]string, 0, len(names)+len(deadNames))
	for _, n := range names {
		keys = append(keys, PolicyKey(n))
	}
	for _, n := range deadNames {
		keys = append(keys, DeadLetterKey(n))
	}
	for chunk := range slices.Chunk(keys, maxManyKeys) {
		got, err := r.getMany(ctx, chunk)
		if err != nil {
			return Selected{}, fmt.Errorf("registry: read keys (%d asked): %w", len(chunk), err)
		}
		for key, raw := range got {
			sel.decode(key, raw)
		}
	}
	return sel, nil
}

func (sel *Selected) decode(key string, raw []byte) {
	var err error
	if name, ok := strings.CutPrefix(key, DeadLetterPrefix); ok {
		var d policy.DeadLetter
		if err = decodeObject(raw, &d); err == nil {
			sel.DeadLetters[name] = d
		}
	} else {
		var e policy.Entry
		if err = decodeObject(raw, &e); err == nil {
			sel.Entries[strings.TrimPrefix(key, PolicyPrefix)] = e
		}
	}
	if err != nil {
		if sel.Problems == nil {
			sel.Problems = map[string]error{}
		}
		sel.Problems[key] = fmt.Errorf("registry: decode %s: %w", key, err)
	}
}
