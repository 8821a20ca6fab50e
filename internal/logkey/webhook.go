package logkey

// The webhook receiver's line, one per delivery, and its metrics line.
// The delivery id is Delivery; the repository a push names is Repo.
const (
	Outcome    = "outcome"     // refused, rejected, ping, ignored, invalid, sync, failed
	StatusCode = "statusCode"  // the HTTP status answered
	Event      = "githubEvent" // X-GitHub-Event
	SourceIP   = "sourceIp"
	UserAgent  = "userAgent"
	Ref        = "ref"
	After      = "after"
	Function   = "syncFunction" // the function a push is handed to
)
