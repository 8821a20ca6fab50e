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

// Guard refuses a plan that empties the registry (entries) or loses too
// much of it, with an error wrapping ErrRefused. A delete whose content
// (blob sha) survives in the registry under another name, as in a commit
// that renames every file, loses nothing.
func Guard(plan policy.Plan, entries map[string]policy.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	deleted := map[string]bool{}
	survives := map[string]bool{}
	puts := 0
	for _, it := range plan.Items {
		if it.Action == policy.ActDelete {
			deleted[it.PolicyName] = true
			continue
		}
		puts++
		survives[it.SHA] = true
	}
	for name, e := range entries {
		if !deleted[name] {
			survives[e.SHA] = true
		}
	}
	lost := 0
	for name := range deleted {
		if e, ok := entries[name]; ok && (e.SHA == "" || !survives[e.SHA]) {
			lost++
		}
	}
	return refusal(puts, len(deleted), lost, len(entries))
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
