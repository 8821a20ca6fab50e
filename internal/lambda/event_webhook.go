package lambda

import (
	"fmt"
	"strings"

	"github.com/knue/syncjob/internal/redact"
	"github.com/knue/syncjob/internal/webhook"
)

// WebhookEvent is the payload the webhook receiver hands to the sync
// function: lambdaEvent's webhook fields, and nothing else.
type WebhookEvent struct {
	Trigger  string `json:"trigger"`  // always "webhook"
	After    string `json:"after"`    // the pushed commit
	Delivery string `json:"delivery"` // GitHub's X-GitHub-Delivery
	// Forced says the push was forced (the push event's "forced"): the
	// run waits out KV's consistency window before trusting what it reads
	// (syncer.Options.Forced).
	Forced bool `json:"forced,omitempty"`
	// Before is, with Forced, the commit the branch held before the push
	// (the push event's "before"; syncer.Options.Before).
	Before string `json:"before,omitempty"`
}

// checkWebhookFields checks after and delivery: both present, and well
// formed, with trigger webhook; absent otherwise. The sync does not need
// after (a run reads the branch head, which may be newer), but a payload
// that names no commit is not the receiver's.
func checkWebhookFields(ev lambdaEvent) error {
	if ev.Trigger != TriggerWebhook {
		switch {
		case ev.After != "":
			return &EventError{"after", `only with "trigger":"webhook"`}
		case ev.Delivery != "":
			return &EventError{"delivery", `only with "trigger":"webhook"`}
		case ev.Forced:
			return &EventError{"forced", `only with "trigger":"webhook"`}
		case ev.Before != "":
			return &EventError{"before", `only with "trigger":"webhook"`}
		}
		return nil
	}
	switch {
	case !webhook.IsCommitSHA(ev.After):
		return &EventError{"after", fmt.Sprintf("%s is not a commit sha (40 lower-case hex digits)", redact.Quote(ev.After))}
	case strings.TrimSpace(ev.Delivery) == "":
		return &EventError{"delivery", "required with trigger webhook: the X-GitHub-Delivery id"}
	case len(ev.Delivery) > webhook.MaxDeliveryLen:
		return &EventError{"delivery", fmt.Sprintf("longer than %d bytes", webhook.MaxDeliveryLen)}
	case webhook.Unverified(ev.Delivery) != ev.Delivery:
		// the receiver hands on only what Unverified keeps: this payload is not its
		return &EventError{"delivery", "holds control or invisible characters, or surrounding spaces (the receiver passes GitHub's id cleaned)"}
	case ev.Before != "" && !ev.Forced:
		return &EventError{"before", `only with "forced":true`}
	case ev.Before != "" && !webhook.IsCommitSHA(ev.Before):
		return &EventError{"before", fmt.Sprintf("%s is not a commit sha (40 lower-case hex digits)", redact.Quote(ev.Before))}
	}
	return nil
}
