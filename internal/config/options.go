package config

import (
	"github.com/knue/syncjob/internal/differ"
	"github.com/knue/syncjob/internal/syncer"
)

// SyncOptions completes opt (mode, dry run, trigger) with the settings of c.
func (c Config) SyncOptions(opt syncer.Options) syncer.Options {
	opt.MaxFileSize = c.MaxFileSize
	opt.BatchSize = c.BatchSize
	opt.Concurrency = c.Concurrency
	opt.ReconcileInterval = c.ReconcileInterval
	opt.DailyWriteBudget = c.DailyWriteBudget
	opt.MaxDuration = c.MaxDuration
	opt.DeleteLimit = &differ.Limit{Count: c.MaxDelete, Percent: c.MaxDeletePercent}
	// Workers KV can be written by anyone with the token: the advisory
	// lease keeps a second writer out. On both backends the lease is also
	// what tells the next run that this one did not finish (see
	// docs/design.md "One run"), so every run takes it.
	opt.LeaseTTL = syncer.DefaultLeaseTTL
	return opt
}
