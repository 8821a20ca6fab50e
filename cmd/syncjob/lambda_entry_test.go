package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/knue/syncjob/internal/github/githubtest"
	"github.com/knue/syncjob/internal/policy"
	"github.com/knue/syncjob/internal/wire"

	"github.com/knue/syncjob/internal/lambda"
)

// lambdaEntry returns the entry the runtime calls, on the world's fakes,
// wrapped as aws-lambda-go wraps what lambda.Start is given.
func (w *world) lambdaEntry(logs *bytes.Buffer) awslambda.Handler {
	d := w.lambdaDeps()
	e := lambda.NewEntry(func(k string) string { return w.env[k] }, logs, d.now, wire.LambdaJob(d.hooks()))
	return awslambda.NewHandler(e)
}

func invokeRaw(t *testing.T, h awslambda.Handler, payload string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-0002"})
	return h.Invoke(ctx, []byte(payload))
}

func TestLambdaEntry_EmptyPayloadIsAManualRun(t *testing.T) {
	t.Parallel()
	for _, payload := range []string{"", "  ", "null", "{}"} {
		t.Run(payload, func(t *testing.T) {
			w := newWorld(t)
			head := seed(w)
			out, err := invokeRaw(t, w.lambdaEntry(new(bytes.Buffer)), payload)
			if err != nil {
				t.Fatalf("payload %q: %v", payload, err)
			}
			var sum policy.RunSummary
			if err := json.Unmarshal(out, &sum); err != nil {
				t.Fatalf("result %s: %v", out, err)
			}
			if sum.Trigger != "manual" || sum.Status != policy.RunSuccess || sum.CommitSHA != head || sum.Added != 3 {
				t.Errorf("summary = %+v", sum)
			}
		})
	}
}

func TestLambdaEntry_ResultIsTheFlatSummary_ErrorsKeepTheirType(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	h := w.lambdaEntry(new(bytes.Buffer))
	out, err := invokeRaw(t, h, `{"mode":"full","dryRun":true}`)
	if err != nil {
		t.Fatal(err)
	}
	var flat map[string]any
	if err := json.Unmarshal(out, &flat); err != nil {
		t.Fatal(err)
	}
	if flat["dryRun"] != true || flat["added"] != 3.0 || flat["plan"] == nil {
		t.Errorf("result = %s", out)
	}

	_, err = invokeRaw(t, h, `{"mode":"fast"}`)
	var ee *lambda.EventError
	if !errors.As(err, &ee) {
		t.Errorf("bad event: %v (%T), want *lambda.EventError", err, err)
	}
	w.gh.FailNext(githubtest.AnyKind, -1, githubtest.ServerError(502))
	_, err = invokeRaw(t, h, `{"trigger":"schedule"}`)
	var re *lambda.RunError
	if !errors.As(err, &re) {
		t.Errorf("failed run: %v (%T), want *lambda.RunError (Lambda reports its type name)", err, err)
	}
}
