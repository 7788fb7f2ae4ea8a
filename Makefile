# Sluice — the two set-up commands are `make run` and `make test` (README.md).
SHELL   := /bin/bash
GO      ?= go
OPA     := $(GO) tool opa
EVENT   ?= testdata/events/alarm-sns-burst.json
CONFIG  ?= testdata/sluice.yaml
REPLAY  ?= testdata/replay
LEDGER  ?= sluice.db
BIN     := bin

.PHONY: run test policy bench lint build fuzz clean package

## run: the main job offline: a real-format SNS alarm, recorded provider quotes, sandbox broker, SQLite ledger.
run:
	$(GO) run ./cmd/sluice burst --event $(EVENT) --config $(CONFIG) --replay $(REPLAY) --ledger $(LEDGER)

## test: policy checks, go vet and every Go test; ends with "N passed, N failed".
test: policy
	$(GO) vet ./...
	@set -o pipefail; rc=0; $(GO) test -count=1 -timeout 20m -v ./... > .gotest.log 2>&1 || rc=$$?; \
	grep -E '^(ok|FAIL|---|panic:|\?)|^\s+--- FAIL' .gotest.log | grep -v -- '--- PASS' || true; \
	p=$$(grep -c -- '--- PASS' .gotest.log); f=$$(grep -c -- '--- FAIL' .gotest.log); s=$$(grep -c -- '--- SKIP' .gotest.log); \
	echo "$$p passed, $$f failed, $$s skipped"; exit $$rc

## policy: the compliance team's checks in process with OPA's Go packages (sluice policy check:
## opa fmt --fail, opa check --strict in the evaluation sandbox, opa test --coverage threshold 90),
## then Regal (pinned in tools/regal/go.mod; built into bin/regal on first use).
policy:
	$(GO) run ./cmd/sluice policy check policy/
	@if [ ! -x $(BIN)/regal ]; then (cd tools/regal && $(GO) build -o ../../$(BIN)/regal github.com/styrainc/regal) || \
	  echo "WARNING: Regal could not be built (module proxy unreachable?); lint skipped, see policy/README.md"; fi
	@if [ -x $(BIN)/regal ]; then $(BIN)/regal lint policy/; fi

## bench: speed targets live here, not in timed tests.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

## fuzz: a short run of every parser's fuzz target.
fuzz:
	@for t in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -h '^func Fuzz' $$t/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=10s $$t || exit 1; done; done

## lint: gofmt and go vet must be clean.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## build: the CLI for this machine and the Lambda bootstrap (provided.al2023, arm64).
build:
	$(GO) build -o $(BIN)/sluice ./cmd/sluice
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -o $(BIN)/burst/bootstrap ./functions/burst

## package: one Lambda zip per function under build/ (provided.al2023, arm64): bootstrap + sluice.yaml.
package:
	infra/package.sh $(CONFIG)

clean:
	rm -rf $(BIN) build .gotest.log .opa-coverage.json sluice.db sluice.db-wal sluice.db-shm
