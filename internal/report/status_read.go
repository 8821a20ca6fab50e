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
// runs it lists.
func ReadStatus(ctx context.Context, reg *registry.Registry, now time.Time, runs int) (Status, error) {
	var rep Status
	var err error
	if rep.LastRun, err = reg.LastRun(ctx); err != nil {
		return rep, err
	}
	if rep.LastCommit, err = reg.LastCommit(ctx); err != nil {
		return rep, err
	}
	if rep.Lease, err = reg.Lease(ctx); err != nil {
		return rep, err
	}
	rep.LeaseExpired = rep.Lease != nil && rep.Lease.Expired(now)
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
	if err := rep.readDeadLetters(ctx, reg); err != nil {
		return rep, err
	}
	if rep.Policies, err = reg.CountPolicies(ctx); err != nil {
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
// recent runs shown: the history's listing says, without reading every run.
func (rep *Status) readLastSuccess(ctx context.Context, reg *registry.Registry, now time.Time) error {
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
	rep.Writer, _ = registry.BoltHolder(cfg.RegistryPath) // who writes it is a courtesy: no error for it
}
