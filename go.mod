module github.com/knue/syncjob

go 1.26.0

require (
	github.com/aws/aws-lambda-go v1.55.1
	github.com/cloudflare/cloudflare-go v0.119.0
	github.com/google/go-cmp v0.7.0
	github.com/google/go-github/v66 v66.0.0
	github.com/mattn/go-runewidth v0.0.31
	go.etcd.io/bbolt v1.4.3
	go.yaml.in/yaml/v3 v3.0.4
	golang.org/x/sync v0.25.0
	golang.org/x/term v0.48.0
	golang.org/x/text v0.44.0
)

require (
	github.com/clipperhouse/uax29/v2 v2.2.0 // indirect
	github.com/goccy/go-json v0.10.5 // indirect
	github.com/google/go-querystring v1.1.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	golang.org/x/net v0.34.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/time v0.9.0 // indirect
)
