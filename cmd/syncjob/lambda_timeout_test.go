package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/lambda"
	"github.com/knue/syncjob/internal/policy"
)

func TestLambda_OutOfTime_SaysSoInLambdaTermsAndCountsRunTimedOut(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	seed(w)
	// The invocation's deadline is closer than the reserve: the run is out
	// of time before it starts, as one that used its time would be.
	inv := w.invoke(`{"trigger":"schedule"}`, lambda.Reserve/2)
	var re *lambda.RunError
	if !errors.As(inv.err, &re) || re.Status != policy.RunFailed {
		t.Fatalf("err = %v, want a failed RunError", inv.err)
	}
	for _, want := range []string{
		"timed out: the run stopped 15s before the Lambda function's timeout",
		"lastCommit stays, so the next invocation plans the change again from the start",
		"raise the function's Timeout",
		"stopped at: ", // then the cause
	} {
		if !strings.Contains(re.Message, want) {
			t.Errorf("message lacks %q:\n%s", want, re.Message)
		}
	}
	if !strings.HasPrefix(re.Message, "timed out: ") {
		t.Errorf("the message does not say first that the invocation ran out of time: %s", re.Message)
	}
	if strings.Contains(re.Message, "next run continues") {
		t.Errorf("the message promises a continuation: %s", re.Message)
	}
	if m := inv.metrics(t); len(m) != 1 || m[0]["RunTimedOut"] != 1.0 || m[0]["RunFailed"] != 1.0 {
		t.Errorf("EMF = %v, want RunTimedOut 1 and RunFailed 1", m)
	}
	if fin := inv.line(t, "invocation finished"); fin["timedOut"] != true {
		t.Errorf("invocation finished = %v, want timedOut true", fin)
	}

	// With time, the same invocation succeeds and counts no timeout.
	inv = w.invoke(`{"trigger":"schedule"}`, time.Minute)
	if inv.err != nil {
		t.Fatalf("with time: %v", inv.err)
	}
	if m := inv.metrics(t); len(m) != 1 || m[0]["RunTimedOut"] != 0.0 || m[0]["RunSucceeded"] != 1.0 {
		t.Errorf("EMF = %v, want RunTimedOut 0", m)
	}
	if fin := inv.line(t, "invocation finished"); fin["timedOut"] != false {
		t.Errorf("invocation finished = %v, want timedOut false", fin)
	}
}
