package report

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/knue/syncjob/internal/config"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/registry"
)

// ReadStatus reads the report from the registry; runs is how many recent
// runs it lists. Every read is a listing or a bulk read, never one request
// per entry (on Cloudflare: one bulk get for lastCommit, lastRun and the
// lease, a listing each for the queue, the dead letters, the policies and
// the run history, and a bulk get of the recent runs). checkOnly reads what
// the health check needs alone: the state, the dead letters and, when the
// last run does not record it, the history's last success.
func ReadStatus(ctx context.Context, reg *registry.Registry, now time.Time, runs int, checkOnly bool) (Status, error) {
	var rep Status
	if err := rep.readState(ctx, reg, now); err != nil {
		return rep, err
	}
	if err := rep.readDeadLetters(ctx, reg); err != nil {
		return rep, err
	}
	if checkOnly {
		return rep, rep.readLastSuccess(ctx, reg, now)
	}
	q, err := reg.Queue(ctx)
	if err != nil && q == nil {
		return rep, err
	}
	rep.QueueDepth = len(q)
	for _, e := range q {
		if e.ErrorMessage != nil {
			rep.WaitingRetry++
		}
	}
	if rep.Policies, rep.UnreadablePolicies, err = reg.CountPolicies(ctx); err != nil {
		return rep, err
	}
	if err := rep.readLastSuccess(ctx, reg, now); err != nil {
		return rep, err
	}
	if rep.Runs, err = reg.Runs(ctx, runs); err != nil && rep.Runs == nil {
		return rep, err
	}
	return rep, nil
}

// readState reads lastCommit, lastRun and the lease in one request.
func (rep *Status) readState(ctx context.Context, reg *registry.Registry, now time.Time) error {
	st, err := reg.SyncState(ctx)
	if err != nil {
		return err
	}
	if st.LastRunErr != nil {
		return st.LastRunErr
	}
	if st.LeaseErr != nil {
		return st.LeaseErr
	}
	rep.LastRun, rep.LastCommit, rep.Lease = st.LastRun, st.LastCommit, st.Lease
	rep.LeaseExpired = rep.Lease != nil && rep.Lease.Expired(now)
	return nil
}

func (rep *Status) readDeadLetters(ctx context.Context, reg *registry.Registry) error {
	dead, err := reg.DeadLetters(ctx)
	if err != nil && dead == nil {
		return err
	}
	rep.DeadLetters = SortedValues(dead)
	var bad *registry.DecodeError
	if errors.As(err, &bad) {
		for _, key := range slices.Sorted(maps.Keys(bad.Problems)) {
			rep.UnreadableDeadLetters = append(rep.UnreadableDeadLetters, strings.TrimPrefix(key, registry.DeadLetterPrefix))
		}
	}
	return nil
}

// readLastSuccess finds the last success, which may be older than the
// recent runs shown: the last run records it (lastSuccess); for a last run
// recorded by an older version, the history's listing says, without reading
// every run.
func (rep *Status) readLastSuccess(ctx context.Context, reg *registry.Registry, now time.Time) error {
	if lr := rep.LastRun; lr != nil && !lr.DryRun {
		at := lr.LastSuccess
		if at == "" && lr.Status == policy.RunSuccess {
			at = lr.Timestamp
		}
		if t, err := time.Parse(policy.TimeLayout, at); err == nil {
			rep.LastSuccessAt = t
			rep.LastSuccess = t.Format(time.RFC3339)
			rep.SinceLastSuccess = now.Sub(t).Round(time.Minute).String()
			return nil
		}
	}
	index, err := reg.RunIndex(ctx)
	if err != nil {
		return err
	}
	for _, ref := range index {
		if ref.Status == policy.RunSuccess {
			rep.LastSuccessAt = ref.At
			rep.LastSuccess = ref.At.Format(time.RFC3339)
			rep.SinceLastSuccess = now.Sub(ref.At).Round(time.Minute).String()
			return nil
		}
	}
	return nil
}

// Describe says which registry the report is of, who writes it, and which
// repository and branch it is synced from: what the last run recorded, or
// what the settings say when nothing was recorded. Settings that name
// another repository or branch than the last run synced are reported beside
// it (the next sync would read them).
func (rep *Status) Describe(cfg config.Config) {
	rep.Repo, rep.Branch = cfg.Repo, cfg.Branch
	if lr := rep.LastRun; lr != nil && lr.Repo != "" {
		if cfg.Repo != "" && (!strings.EqualFold(cfg.Repo, lr.Repo) || cfg.Branch != lr.Branch) {
			rep.SettingsRepo, rep.SettingsBranch = cfg.Repo, cfg.Branch
		}
		rep.Repo, rep.Branch = lr.Repo, lr.Branch
	}
	if cfg.Cloudflare() {
		rep.Registry = fmt.Sprintf("Cloudflare Workers KV, account %s, namespace %s", cfg.CFAccountID, cfg.CFNamespaceID)
		return
	}
	rep.Registry = "file " + cfg.RegistryPath
	w, err := registry.BoltHolder(cfg.RegistryPath) // who writes it is a courtesy: no error for it
	rep.Writer = w
	if err == nil && w == nil && rep.Lease != nil && !rep.Lease.Released() {
		// No process holds the file: the lease's run is gone, as the next
		// sync finds (it takes the lease at once), not when the lease
		// expires 6 minutes on; health said healthy after a SIGKILL
		// until then (an adversarial helper).
		rep.LeaseExpired = true
	}
}
