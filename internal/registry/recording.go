package registry

import "context"

// recordingKey marks a context as a run's record (Recording).
type recordingKey struct{}

// Recording marks ctx as the writes that record a run (RecordRun,
// RecordHistory, ReleaseLease): a backend that keeps its requests under a
// budget of its own, below its API's limit (Cloudflare: 1,000 of the 1,200
// requests per 5 minutes), lets these few go beyond it, so that a run its
// rate window stopped can still record itself (partial, naming what waits)
// instead of failing unrecorded.
func Recording(ctx context.Context) context.Context {
	return context.WithValue(ctx, recordingKey{}, true)
}

// IsRecording reports whether ctx is marked by Recording.
func IsRecording(ctx context.Context) bool {
	v, _ := ctx.Value(recordingKey{}).(bool)
	return v
}
