package syncer

import "github.com/knue/syncjob/internal/logkey"

// Log keys, kept for callers that still name them through this package;
// internal/logkey defines them.
const (
	KeyRunID    = logkey.RunID
	KeyRepo     = logkey.Repo
	KeyBranch   = logkey.Branch
	KeyCommit   = logkey.Commit
	KeyPrevious = logkey.Previous
	KeyMode     = logkey.Mode
	KeyStatus   = logkey.Status
	KeyError    = logkey.Error
)
