// Command syncjob keeps a policy registry equal to the markdown policies of
// one branch of a GitHub repository. See README.md and docs/design.md.
package main

//go:generate go test -run TestREADME_SettingsTableIsGenerated -update .

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	_ "github.com/knue/syncjob/internal/heapprof" // heap profiles, in a heapprof build only
	"github.com/knue/syncjob/internal/lambda"
	"github.com/knue/syncjob/internal/report"
	"github.com/knue/syncjob/internal/wire"
)

func main() {
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		lambda.Start(wire.LambdaJob(wire.Hooks{})) // the Lambda runtime loop; never returns
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runWith(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, deps{stdin: os.Stdin, stdinTerminal: report.IsTerminalFile(os.Stdin)})
	stop()
	os.Exit(code)
}
