package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/knue/syncjob/internal/lambda"
)

// fakeLambda is the AWS Lambda Invoke API as the receiver uses it:
// POST /2015-03-31/functions/{FunctionName}/invocations, SigV4-signed. An
// asynchronous invocation (X-Amz-Invocation-Type: Event) is recorded and
// answered 202 at once, as Lambda does once the event is queued; the run
// it asks for is the test's to start (or forward) when it chooses.
type fakeLambda struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []recordedInvocation
	// errorType and status, when set, answer every invocation with that
	// AWS error instead.
	errorType string
	status    int
	// forward, when set, is given each recorded invocation before the 202
	// is written; it must queue it and return at once, as Lambda's
	// asynchronous queue does (the RIE test passes it on to the sync
	// function).
	forward func(recordedInvocation)
}

type recordedInvocation struct {
	Function       string
	InvocationType string // the X-Amz-Invocation-Type header
	Payload        []byte
	Signed         bool // an AWS SigV4 Authorization header was sent
}

const (
	testRegion       = "ap-northeast-2"
	testSyncFunction = "syncjob-sync"
)

func newFakeLambda(t testing.TB) *fakeLambda {
	t.Helper()
	f := &fakeLambda{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", f.invoke)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeLambda) invoke(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	inv := recordedInvocation{
		Function:       r.PathValue("name"),
		InvocationType: r.Header.Get("X-Amz-Invocation-Type"),
		Payload:        body,
		Signed:         strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDFAKELAMBDA/"),
	}
	f.mu.Lock()
	errorType, status, forward := f.errorType, f.status, f.forward
	if status == 0 {
		f.got = append(f.got, inv)
	}
	f.mu.Unlock()
	rw.Header().Set("X-Amzn-Requestid", "fake-lambda-request")
	if status != 0 {
		rw.Header().Set("X-Amzn-Errortype", errorType)
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(status)
		_ = json.NewEncoder(rw).Encode(map[string]string{"Type": "User", "message": "Function not found: " + inv.Function})
		return
	}
	if inv.InvocationType != "Event" {
		// The receiver never waits for a run.
		http.Error(rw, `{"message":"the fake answers asynchronous invocations only"}`, http.StatusBadRequest)
		return
	}
	if forward != nil {
		forward(inv)
	}
	rw.WriteHeader(http.StatusAccepted)
}

// fail makes every invocation answer an AWS error.
func (f *fakeLambda) fail(status int, errorType string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.errorType = status, errorType
}

func (f *fakeLambda) invocations() []recordedInvocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recordedInvocation(nil), f.got...)
}

// invoker is the receiver's handoff on a real SDK client pointed at the
// fake, with static credentials.
func (f *fakeLambda) invoker() *lambda.Invoker {
	return &lambda.Invoker{Client: awslambda.New(awslambda.Options{
		Region:       testRegion,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDFAKELAMBDA", "fake-lambda-secret-key", ""),
		BaseEndpoint: aws.String(f.srv.URL),
	})}
}
