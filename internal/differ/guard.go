package differ

import (
	"errors"
	"fmt"

	"github.com/knue/syncjob/internal/policy"
)

// ErrRefused is returned when a safety guard refuses the plan (exit code 4).
var ErrRefused = errors.New("refused by the mass-delete guard")

// RefusedBy is the refusal of a safety guard other than the mass-delete
// one (the daily write budget, a rewind or retarget, an expected head):
// it matches ErrRefused, so that it exits 4 as every refusal does, but
// reads "refused: why", not as the mass-delete guard's, whose way past
// (--allow-mass-delete) is not its own (an adversarial helper found a
// retarget refused "by the mass-delete guard" in the run's line, its
// record and status --check).
func RefusedBy(why string) error { return refusedBy(why) }

type refusedBy string

// RefusedPrefix begins a RefusedBy refusal's text: the run status it ends
// in, as the report and status --check strip it.
const RefusedPrefix = policy.RunRefused + ": "

func (e refusedBy) Error() string        { return RefusedPrefix + string(e) }
func (e refusedBy) Is(target error) bool { return target == ErrRefused }

// Mass-delete guard thresholds: a plan loses too much when it deletes more
// than MassDeleteMin policies and more than MassDeletePercent of the
// registry, counting only content that does not survive under another name.
const (
	MassDeleteMin     = 10
	MassDeletePercent = 20
)

// Limit is how much of the registry a plan may lose: the guard refuses a
// plan that loses more than Count policies and more than Percent of the
// registry.
type Limit struct{ Count, Percent int }

// DefaultLimit: more than 10 policies and more than 20% of the registry.
var DefaultLimit = Limit{Count: MassDeleteMin, Percent: MassDeletePercent}

// AllowAny, as GuardWithin's allow, lets any plan through the guard.
const AllowAny = -1

// GuardWithin refuses a plan that empties the registry or loses more of it
// than lim,
// with an error wrapping ErrRefused. Call it once titles are read. entries
// are the registry's entries the run read (all of them on a full run; on an
// incremental run, those the changeset touches) and total the number of
// policies the registry holds. A deleted policy whose content survives
// under another name loses nothing: the same blob sha, the same title (in
// the plan or in entries), or a rename git reports (renames, old name → new
// name) whose new name the head keeps. So a commit that renames every file,
// even one that also edits each, passes.
//
// allow is what the operator let through: AllowAny any plan; a positive
// count only a plan that deletes exactly that many policies, and refuses
// any other (the plan reviewed is not the plan made now); 0 nothing.
func GuardWithin(plan policy.Plan, entries map[string]policy.Entry, renames map[string]string, total int, lim Limit, allow int) error {
	deleted := map[string]bool{}
	for _, it := range plan.Items {
		if it.Action == policy.ActDelete {
			deleted[it.PolicyName] = true
		}
	}
	switch {
	case allow == AllowAny:
		return nil
	case allow > 0 && len(deleted) != allow:
		return fmt.Errorf("%w: the plan deletes %d policies, not the %d that --allow-mass-delete=%d lets through: it is not the plan that was reviewed", ErrRefused, len(deleted), allow, allow)
	case allow > 0:
		return nil
	}
	total = max(total, len(entries))
	if total == 0 {
		return nil
	}
	s := survivors(plan, entries, deleted)
	lost := 0
	for name := range deleted {
		e, ok := entries[name]
		if ok && !s.keep(e, renames[name]) {
			lost++
		}
	}
	return refusal(len(plan.Items)-len(deleted), len(deleted), lost, total, lim)
}

// survivorSet is what the registry still holds after a plan: blob shas,
// titles and names.
type survivorSet struct{ shas, titles, names map[string]bool }

func survivors(plan policy.Plan, entries map[string]policy.Entry, deleted map[string]bool) survivorSet {
	s := survivorSet{shas: map[string]bool{}, titles: map[string]bool{}, names: map[string]bool{}}
	add := func(name, sha, title string) {
		s.names[name] = true
		if sha != "" {
			s.shas[sha] = true
		}
		if title != "" {
			s.titles[title] = true
		}
	}
	for _, it := range plan.Items {
		if it.Action != policy.ActDelete {
			add(it.PolicyName, it.SHA, it.Title)
		}
	}
	for name, e := range entries {
		if !deleted[name] {
			add(name, e.SHA, e.Title)
		}
	}
	return s
}

// keep reports whether the content of the deleted entry e survives.
func (s survivorSet) keep(e policy.Entry, renamedTo string) bool {
	return (e.SHA != "" && s.shas[e.SHA]) || (e.Title != "" && s.titles[e.Title]) || (renamedTo != "" && s.names[renamedTo])
}

func refusal(puts, deleted, lost, total int, lim Limit) error {
	switch {
	case puts == 0 && deleted >= total:
		return fmt.Errorf("%w: the plan deletes all %d policies and adds none (an empty tree, a wrong branch?); run with --allow-mass-delete=%d if that is meant", ErrRefused, total, deleted)
	case total > 1 && lost == total:
		// nothing the registry held survives, even if something else is
		// added: a wrong branch or path filter on a small registry
		return fmt.Errorf("%w: the plan loses all %d policies (a wrong branch or path?); run with --allow-mass-delete=%d if that is meant", ErrRefused, total, deleted)
	case lost > lim.Count && lost*100 > total*lim.Percent:
		return fmt.Errorf("%w: the plan loses %d of %d policies (more than MAX_DELETE=%d and MAX_DELETE_PERCENT=%d%%); run with --allow-mass-delete=%d if that is meant", ErrRefused, lost, total, lim.Count, lim.Percent, deleted)
	}
	return nil
}
