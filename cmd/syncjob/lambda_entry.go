package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
)

// lambdaEntry is what the Lambda runtime calls. It takes the payload as raw
// bytes: aws-lambda-go would decode a typed one first, and an empty payload
// (a manual run, DESIGN.md "Interface") would fail as EOF before reaching
// the handler.
type lambdaEntry struct {
	sync *lambdaHandler
	logs io.Writer
}

func newLambdaEntry(getenv env, logs io.Writer, d deps) *lambdaEntry {
	return &lambdaEntry{sync: newLambdaHandler(getenv, logs, d), logs: logs}
}

// Invoke serves one invocation: it implements lambda.Handler.
func (e *lambdaEntry) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	res, err := e.sync.Handle(ctx, json.RawMessage(payload))
	if err != nil {
		return nil, err
	}
	return marshalResult(res)
}

// marshalResult encodes a result as aws-lambda-go would: no HTML escaping,
// so a title with "<" reads as itself.
func marshalResult(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
