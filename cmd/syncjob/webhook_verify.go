package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/knue/syncjob/internal/lambda"
	"github.com/knue/syncjob/internal/webhook"
)

const webhookUsage = `Usage: syncjob webhook verify [--secret-env VAR] [--signature SIG | --headers FILE] < BODY

The webhook receiver is a Lambda function (infra/README.md, "Webhook"); on the
command line, "verify" checks a captured delivery as the receiver does.

Subcommands:
  verify    check a delivery's X-Hub-Signature-256 against its body and the secret

Run "syncjob webhook verify --help" for its flags.
`

// webhookVerifyCommand is "syncjob webhook verify".
type webhookVerifyCommand struct{ p *program }

var webhookVerifyHelp = help{
	name:  "webhook verify",
	usage: "webhook verify [--secret-env VAR] [--signature SIG | --headers FILE] < BODY",
	about: `Checks a captured GitHub delivery as the webhook receiver does: the
X-Hub-Signature-256 of the body (stdin: the exact bytes GitHub sent; a payload
copied from a formatted view will not match) under the webhook secret. Prints
"valid" and exits 0, or "invalid: why" and exits 1. With --headers and
GITHUB_REPO set (GITHUB_BRANCH, default main), it also says what the receiver
would answer.`,
}

func (c *webhookVerifyCommand) Run(_ context.Context, args []string) error {
	fs := c.p.flagSet("webhook verify")
	secretEnv := fs.String("secret-env", lambda.EnvWebhookSecret, "the environment variable (`VAR`) that holds the webhook secret")
	signature := fs.String("signature", "", "the X-Hub-Signature-256 header (`SIG`), sha256=<64 hex digits>")
	headersFile := fs.String("headers", "", "the delivery's headers (`FILE`): one \"Name: value\" a line, as GitHub's\nRecent Deliveries shows them, or a JSON object (a Function URL event, or its\n\"headers\"); X-Hub-Signature-256 is read from it")
	if _, _, err := c.p.parse(fs, webhookVerifyHelp, args); err != nil {
		return err
	}
	usageErr := func(problem string) error { return usageError(webhookVerifyHelp.name, problem) }
	secret := c.p.getenv(*secretEnv)
	if err := lambda.CheckWebhookSecret(*secretEnv, secret); err != nil {
		return &exitError{exitUsage, err}
	}
	headers, err := verifyHeaders(*signature, *headersFile, usageErr)
	if err != nil {
		return err
	}
	sig := webhook.Request{Headers: headers}.Header(webhook.HeaderSignature)
	if err := webhook.Verify([]byte(secret), nil, sig); errors.Is(err, webhook.ErrMalformed) {
		// said before stdin is read: no body can make it valid
		return usageErr(err.Error())
	}
	if c.p.stdin == nil {
		return usageErr("no body: pipe the delivery's body to stdin")
	}
	body, err := io.ReadAll(io.LimitReader(c.p.stdin, webhook.MaxBody+1))
	if err != nil {
		return fmt.Errorf("webhook verify: read the body: %w", err)
	}

	req := webhook.Request{Method: "POST", Headers: headers, Body: string(body)}
	if len(body) > webhook.MaxBody {
		return c.invalid(fmt.Sprintf("the body is over %d bytes: the receiver refuses it (413) before checking the signature", webhook.MaxBody))
	}
	if err := webhook.Verify([]byte(secret), body, req.Header(webhook.HeaderSignature)); err != nil {
		why := err.Error()
		switch {
		case errors.Is(err, webhook.ErrUnsigned) && req.Header(webhook.HeaderSignatureSHA1) != "":
			why = "only X-Hub-Signature (sha1) was given; the receiver requires X-Hub-Signature-256"
		case errors.Is(err, webhook.ErrMismatch):
			why += fmt.Sprintf(" under the secret in %s (another secret, or not the exact bytes GitHub sent)", *secretEnv)
		}
		return c.invalid(why)
	}
	fmt.Fprintln(c.p.stdout, "valid")
	if repo := c.p.getenv("GITHUB_REPO"); *headersFile != "" && repo != "" {
		branch := c.p.getenv("GITHUB_BRANCH")
		if branch == "" {
			branch = "main"
		}
		o := webhook.Receive(req, func() ([]byte, error) { return []byte(secret), nil }, webhook.Target{Repo: repo, Branch: branch})
		fmt.Fprintf(c.p.stdout, "the receiver would answer %d: %s\n", o.Status, o.Reason)
	}
	return nil
}

// verifyHeaders are the delivery's headers: the signature given, or those
// read from a captured file.
func verifyHeaders(signature, headersFile string, usageErr func(string) error) (map[string]string, error) {
	switch {
	case signature != "" && headersFile != "":
		return nil, usageErr("give --signature or --headers, not both")
	case signature != "":
		return map[string]string{webhook.HeaderSignature: signature}, nil
	case headersFile != "":
		h, err := webhook.ReadCapturedHeaders(headersFile)
		if err != nil {
			return nil, &exitError{exitUsage, fmt.Errorf("webhook verify: %w", err)}
		}
		return h, nil
	}
	return nil, usageErr("needs the signature: --signature SIG or --headers FILE")
}

func (c *webhookVerifyCommand) invalid(why string) error {
	fmt.Fprintln(c.p.stdout, "invalid: "+why)
	return &exitError{code: exitFailed}
}
