package syncer

// WatchWrites sets o's hook told of the registry writes a run makes
// (n > 0) and lets go of (n < 0).
func WatchWrites(o *Options, made func(n int)) { o.made = made }
