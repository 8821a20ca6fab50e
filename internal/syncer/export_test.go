package syncer

import "context"

// WatchWrites is ctx with a hook told of the registry writes a run makes
// (n > 0) and lets go of (n < 0).
func WatchWrites(ctx context.Context, made func(n int)) context.Context {
	return context.WithValue(ctx, madeKey{}, made)
}
