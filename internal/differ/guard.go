package differ

import (
	"errors"
	"fmt"

	"github.com/knue/syncjob/internal/policy"
)

// ErrRefused is returned when a safety guard refuses the plan (exit code 4).
var ErrRefused = errors.New("refused by the mass-delete guard")

// Mass-delete guard thresholds: a plan loses too much when it deletes more
// than MassDeleteMin policies and more than MassDeletePercent of the
// registry, counting only content that does not survive under another name.
const (
	MassDeleteMin     = 10
	MassDeletePercent = 20
)

// Guard refuses a plan that empties the registry or loses too much of it,
// with an error wrapping ErrRefused. Call it once titles are read. entries
// are the registry's entries the run read (all of them on a full run; on an
// incremental run, those the changeset touches) and total the number of
// policies the registry holds. A deleted policy whose content survives
// under another name loses nothing: the same blob sha, the same title (in
// the plan or in entries), or a rename git reports (renames, old name → new
// name) whose new name the head keeps. So a commit that renames every file,
// even one that also edits each, passes.
func Guard(plan policy.Plan, entries map[string]policy.Entry, renames map[string]string, total int) error {
	total = max(total, len(entries))
	if total == 0 {
		return nil
	}
	deleted := map[string]bool{}
	for _, it := range plan.Items {
		if it.Action == policy.ActDelete {
			deleted[it.PolicyName] = true
		}
	}
	s := survivors(plan, entries, deleted)
	lost := 0
	for name := range deleted {
		e, ok := entries[name]
		if ok && !s.keep(e, renames[name]) {
			lost++
		}
	}
	return refusal(len(plan.Items)-len(deleted), len(deleted), lost, total)
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

func refusal(puts, deleted, lost, total int) error {
	switch {
	case puts == 0 && deleted >= total:
		return fmt.Errorf("%w: the plan deletes all %d policies and adds none (an empty tree, a wrong branch?); run with --allow-mass-delete if that is meant", ErrRefused, total)
	case total > 1 && lost == total:
		// nothing the registry held survives, even if something else is
		// added: a wrong branch or path filter on a small registry
		return fmt.Errorf("%w: the plan loses all %d policies (a wrong branch or path?); run with --allow-mass-delete if that is meant", ErrRefused, total)
	case lost > MassDeleteMin && lost*100 > total*MassDeletePercent:
		return fmt.Errorf("%w: the plan loses %d of %d policies (more than %d and %d%%); run with --allow-mass-delete if that is meant", ErrRefused, lost, total, MassDeleteMin, MassDeletePercent)
	}
	return nil
}
