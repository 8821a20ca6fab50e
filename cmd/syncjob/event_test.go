package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/knue/syncjob/internal/lambda"
)

func TestLambda_InvalidEvent_ErrorNamesTheField_NothingRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload string
		field   string
		words   []string
	}{
		{`{"trigger":"schedule","force":true}`, "force", []string{"unknown field", "accepted"}},
		{`{"Mode":"full"}`, "Mode", []string{"unknown field"}}, // field names are exact
		{`{"mode":"fast"}`, "mode", []string{`"fast"`, "full or incremental"}},
		{`{"trigger":"cron"}`, "trigger", []string{`"cron"`, "schedule, manual or webhook"}},
		{`{"dryRun":"yes"}`, "dryRun", []string{"true or false", "string"}},
		{`{"mode":1}`, "mode", []string{"a string", "number"}},
		{`["full"]`, "", []string{"JSON object", "array"}},
		{`"full"`, "", []string{"JSON object"}},
		{`{"mode":"full"} {"dryRun":true}`, "", []string{"more than one"}},
		{`{"mode":`, "", []string{"event:"}},
	} {
		t.Run(tc.payload, func(t *testing.T) {
			w := newWorld(t)
			seed(w)
			inv := w.invoke(tc.payload, time.Minute)
			var ee *lambda.EventError
			if !errors.As(inv.err, &ee) {
				t.Fatalf("err = %v (%T), want *lambda.EventError", inv.err, inv.err)
			}
			if ee.Field != tc.field {
				t.Errorf("field %q, want %q (%v)", ee.Field, tc.field, ee)
			}
			for _, word := range append(tc.words, tc.field) {
				if !strings.Contains(ee.Error(), word) {
					t.Errorf("error %q does not say %q", ee, word)
				}
			}
			if n := w.gh.Requests().Total(); n != 0 {
				t.Errorf("a rejected event made %d GitHub requests", n)
			}
			if rejected := inv.line(t, "invocation rejected"); !strings.Contains(rejected["error"].(string), "event:") {
				t.Errorf("rejection line = %v", rejected)
			}
			if st := w.state(); len(st.keys) != 0 {
				t.Errorf("a rejected event wrote %v", st.keys)
			}
		})
	}
}
