package lambda

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/knue/syncjob/internal/logkey"
)

// Entry is what the Lambda runtime calls. It takes the payload as raw
// bytes: aws-lambda-go would decode a typed one first, and an empty payload
// (a manual run, docs/design.md "Lambda") would fail as EOF before reaching
// the handler.
//
// One artifact serves two functions: the sync function, and the webhook
// receiver, which is the one whose SYNC_FUNCTION_NAME names the other and
// which takes HTTP requests from its Function URL.
type Entry struct {
	Sync     *Handler
	Receiver *Receiver // nil in the sync function
	logs     io.Writer
}

// NewEntry returns the entry of either function, as getenv says.
func NewEntry(getenv func(string) string, logs io.Writer, now func() time.Time, configure Configure) *Entry {
	e := &Entry{Sync: NewHandler(getenv, logs, now, configure), logs: logs}
	if strings.TrimSpace(getenv(EnvSyncFunction)) != "" {
		h, err := NewInvoker(context.Background())
		var hand Handoff
		if err == nil {
			hand = h
		}
		e.Receiver = NewReceiver(getenv, logs, now, hand, err)
	}
	return e
}

// Invoke serves one invocation: it implements lambda.Handler.
func (e *Entry) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	req, isHTTP := functionURLRequest(payload)
	switch {
	case isHTTP && e.Receiver != nil:
		return marshalResult(e.Receiver.Handle(ctx, req))
	case isHTTP:
		return nil, e.reject(ctx, "an HTTP request reached the sync function: webhooks go to the receiver, the function whose "+EnvSyncFunction+" names this one")
	case e.Receiver != nil:
		return nil, e.reject(ctx, "the webhook receiver takes requests from its Function URL only: invoke the sync function ("+EnvSyncFunction+") instead")
	}
	res, err := e.Sync.Handle(ctx, json.RawMessage(payload))
	if err != nil {
		return nil, err
	}
	return marshalResult(res)
}

func (e *Entry) reject(ctx context.Context, problem string) error {
	err := &EventError{Problem: problem}
	requestID := ""
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		requestID = lc.AwsRequestID
	}
	slog.New(slog.NewJSONHandler(e.logs, nil)).Error("invocation rejected", logkey.RequestID, requestID, logkey.Error, err)
	return err
}

// functionURLRequest reports whether payload is a Lambda Function URL
// request (payload format 2.0: requestContext.http.method), and decodes it.
// The sync function's events have no requestContext.
func functionURLRequest(payload []byte) (events.LambdaFunctionURLRequest, bool) {
	var req events.LambdaFunctionURLRequest
	p := bytes.TrimSpace(payload)
	if len(p) == 0 || p[0] != '{' || !bytes.Contains(p, []byte(`"requestContext"`)) {
		return req, false
	}
	if err := json.Unmarshal(p, &req); err != nil || req.RequestContext.HTTP.Method == "" {
		return events.LambdaFunctionURLRequest{}, false
	}
	return req, true
}

// marshalResult encodes a result as aws-lambda-go would: no HTML escaping,
// so a title with "<" reads as itself. (An escaping encoder, json.Marshal,
// escapes what a Result's MarshalJSON returns.)
func marshalResult(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
