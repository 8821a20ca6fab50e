package lambda

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/syncer"
)

// lambdaEvent is an invocation's payload: {"trigger":"schedule"} from the
// scheduler, e.g. {"mode":"full","dryRun":true} by hand.
type lambdaEvent struct {
	Trigger string `json:"trigger"`
	Mode    string `json:"mode"`
	DryRun  bool   `json:"dryRun"`
	// AllowMassDelete lets a backfill through the mass-delete guard, as
	// --allow-mass-delete does; the scheduled event never sets it.
	AllowMassDelete bool `json:"allowMassDelete"`
	// After and Delivery come with trigger webhook (event_webhook.go).
	After    string `json:"after"`
	Delivery string `json:"delivery"`
	Forced   bool   `json:"forced"`
	Before   string `json:"before"`
}

// Event values.
const (
	TriggerSchedule = "schedule"
	triggerManual   = "manual"
	TriggerWebhook  = "webhook"
	eventModeFull   = "full"
	eventModeIncr   = "incremental"
)

// EventError names what is wrong with an invocation's payload.
type EventError struct {
	Field   string // empty when the payload as a whole is wrong
	Problem string
}

func (e *EventError) Error() string {
	if e.Field == "" {
		return "event: " + e.Problem
	}
	return "event: " + e.Field + ": " + e.Problem
}

const acceptedEvent = `accepted: {"trigger":"schedule"|"manual", "mode":"full"|"incremental", "dryRun":true|false, "allowMassDelete":true|false}, or from the webhook receiver {"trigger":"webhook", "after":"<commit sha>", "delivery":"<id>", "forced":true|false, "before":"<commit sha>"}`

// ParseEvent reads a payload strictly: an unknown field, a value of the wrong
// type or outside its set is an *EventError. An empty payload or {} is a
// manual incremental run.
func ParseEvent(payload []byte) (syncer.Options, error) {
	ev, err := decodeEvent(payload)
	if err != nil {
		return syncer.Options{}, err
	}
	opt := syncer.Options{DryRun: ev.DryRun, AllowMassDelete: ev.AllowMassDelete}
	switch ev.Trigger {
	case "", triggerManual:
		opt.Trigger = syncer.TriggerManual
	case TriggerSchedule:
		opt.Trigger = syncer.TriggerSchedule
	case TriggerWebhook:
		opt.Trigger, opt.Delivery, opt.After, opt.Forced, opt.Before = syncer.TriggerWebhook, ev.Delivery, ev.After, ev.Forced, ev.Before
	default:
		return opt, &EventError{"trigger", fmt.Sprintf("%s is not schedule, manual or webhook", redact.Quote(ev.Trigger))}
	}
	if err := checkWebhookFields(ev); err != nil {
		return opt, err
	}
	switch ev.Mode {
	case "", eventModeIncr:
		// The syncer still runs full when it must (first run, reconcile
		// interval, untrusted compare).
	case eventModeFull:
		opt.Full = true
	default:
		return opt, &EventError{"mode", fmt.Sprintf("%s is not full or incremental", redact.Quote(ev.Mode))}
	}
	return opt, nil
}

// decodeEvent decodes one JSON object of known fields, named exactly; an
// empty or null payload is the zero event.
func decodeEvent(payload []byte) (lambdaEvent, error) {
	var ev lambdaEvent
	p := bytes.TrimSpace(payload)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return ev, nil
	}
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return ev, eventDecodeError(err)
	}
	if dec.More() {
		return ev, &EventError{Problem: "more than one JSON value; " + acceptedEvent}
	}
	return ev, checkFields(p)
}

// checkFields refuses what encoding/json lets through: a name in another
// case ("Mode" fills Mode: an operator's typo), a name given twice (the
// last wins: {"dryRun":true,…,"dryRun":false} ran a real sync, an
// adversarial helper found) and a null (read as "not given"). p is one
// JSON object, decoded once already.
func checkFields(p []byte) error {
	dec := json.NewDecoder(bytes.NewReader(p))
	if _, err := dec.Token(); err != nil {
		return eventDecodeError(err)
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return eventDecodeError(err)
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return eventDecodeError(err)
		}
		switch name {
		case "trigger", "mode", "dryRun", "allowMassDelete", "after", "delivery", "forced", "before":
		default:
			return &EventError{fieldShown(name), "unknown field (names are case-sensitive); " + acceptedEvent}
		}
		switch {
		case seen[name]:
			return &EventError{name, "given twice: give each field once"}
		case string(v) == "null":
			return &EventError{name, "null: give a value, or leave the field out"}
		}
		seen[name] = true
	}
	return nil
}

// fieldShown is an unknown field's name as an error shows it: cut as a
// refused value is (redact.Quote), unquoted when it needs no cut.
func fieldShown(name string) string {
	if q := redact.Quote(name); q != strconv.Quote(name) {
		return q
	}
	return name
}

func eventDecodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		want := "a string"
		if typeErr.Field == "dryRun" || typeErr.Field == "allowMassDelete" || typeErr.Field == "forced" {
			want = "true or false"
		}
		return &EventError{typeErr.Field, fmt.Sprintf("want %s, got a JSON %s", want, typeErr.Value)}
	case errors.As(err, &typeErr):
		return &EventError{Problem: fmt.Sprintf("want a JSON object, got a JSON %s; %s", typeErr.Value, acceptedEvent)}
	case errors.As(err, &syntaxErr):
		return &EventError{Problem: fmt.Sprintf("not JSON (offset %d): %v", syntaxErr.Offset, syntaxErr)}
	}
	// encoding/json reports an unknown field as `json: unknown field "x"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &EventError{fieldShown(strings.Trim(name, `"`)), "unknown field; " + acceptedEvent}
	}
	return &EventError{Problem: err.Error()}
}
