package lambda

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	lambdaapi "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// Invoker hands a push to the sync function through the Lambda
// Invoke API, as an asynchronous (Event) invocation.
type Invoker struct {
	Client *lambdaapi.Client
}

// NewInvoker configures the AWS SDK the standard way: in Lambda the
// function's role credentials and region from the environment;
// AWS_ENDPOINT_URL_LAMBDA points it elsewhere (tests, emulators).
func NewInvoker(ctx context.Context) (*Invoker, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws: load configuration: %w", err)
	}
	return &Invoker{Client: lambdaapi.NewFromConfig(cfg)}, nil
}

// InvokeAsync queues payload for function. Lambda answers 202 once the
// event is in the function's queue, where it waits while the one run the
// reserved concurrency allows is going; throttles and failed runs are
// retried by Lambda (the function's EventInvokeConfig).
func (l *Invoker) InvokeAsync(ctx context.Context, function string, payload []byte) error {
	out, err := l.Client.Invoke(ctx, &lambdaapi.InvokeInput{
		FunctionName:   aws.String(function),
		InvocationType: types.InvocationTypeEvent,
		Payload:        payload,
	})
	if err != nil {
		return fmt.Errorf("lambda: invoke %s: %w", function, err)
	}
	if out.StatusCode != http.StatusAccepted {
		return fmt.Errorf("lambda: invoke %s: status %d, want 202 (event queued)", function, out.StatusCode)
	}
	return nil
}
