# Build and test entry points. `make lambda` builds the deployment zip from a
# clean checkout with nothing but Go and either `zip` or python3.

GO      ?= go
# the toolchain go.mod pins, fetched through the module proxy when needed
export GOTOOLCHAIN ?= auto
DIST    := dist
LAMBDA  := $(DIST)/syncjob-lambda.zip

# staticcheck 2026.2.2 (module version v0.8.2), as .ci/run installs it.
STATICCHECK_VERSION := v0.8.2
GOBIN_DIR   := $(or $(shell $(GO) env GOBIN),$(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin)
STATICCHECK := $(GOBIN_DIR)/staticcheck

.PHONY: all test staticcheck bench lambda clean

all: test lambda

test: staticcheck
	$(GO) vet ./...
	$(STATICCHECK) ./...
	$(GO) test -race -count=1 ./...

# Installs the pinned staticcheck unless that version is already there.
staticcheck:
	@$(STATICCHECK) -version 2>/dev/null | grep -qF '($(STATICCHECK_VERSION:v%=%))' || \
		$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# Benchmarks claim the request counts and speed of a run (see README.md).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The Lambda artifact: a static linux/arm64 binary named bootstrap (what the
# provided.al2023 runtime starts), built without the net/rpc shim that only
# the retired go1.x runtime used, zipped alone at the archive root with its
# executable bit.
lambda:
	rm -rf $(DIST)/lambda $(LAMBDA)
	mkdir -p $(DIST)/lambda
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o $(DIST)/lambda/bootstrap ./cmd/syncjob
	if command -v zip >/dev/null 2>&1; then \
		cd $(DIST)/lambda && zip -q -X ../syncjob-lambda.zip bootstrap; \
	else \
		cd $(DIST)/lambda && python3 -m zipfile -c ../syncjob-lambda.zip bootstrap; \
	fi
	@ls -l $(LAMBDA)

clean:
	rm -rf $(DIST)
