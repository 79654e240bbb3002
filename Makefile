# brain's tasks. `make test` is the one command that runs every test.
.PHONY: run web test fork-check jaeger openapi client client-check client-server-check api-check bench bench-e2e bench-smoke soak lint rename size lighthouse image

GO ?= go
# make size fails above this: a ratchet toward 18,000, lowered by every trim and raised
# only by a feature's own lines (OpenTelemetry tracing: +232)
SIZE_BUDGET ?= 19382
WEB_DEPS := web/node_modules/.package-lock.json
# the Jaeger all-in-one the tracing test runs (make jaeger)
JAEGER_VERSION := v1.75.0
JAEGER ?= $(HOME)/.cache/brain/jaeger-$(JAEGER_VERSION)

# make image: the image's name, its build context, and the tool that builds
# it (vfs storage, which works where overlay mounts cannot: PODMAN_FLAGS=
# for your podman's own, PODMAN=docker PODMAN_FLAGS= for Docker)
IMAGE ?= brain:latest
IMAGE_CONTEXT ?= bin/image
PODMAN ?= podman
PODMAN_FLAGS ?= --storage-driver vfs
CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt

run: web ## build the dashboard and the /docs UI, then run the server with its defaults (SQLite and in-memory state): the dashboard at /, the API reference at /docs
	$(GO) run ./cmd/brain

web: $(WEB_DEPS) ## build the dashboard and the /docs UI into web/dist/, which the next go build (or go run) embeds
	cd web && npm run --silent build

test: $(WEB_DEPS) ## every test: the benchmark module compiled, Go with -race (spec drift and a fork's first week included), the floods and costs the race detector would distort without it, the TypeScript client check, its tests against a real server and the dashboard's in Chromium, every benchmark once
	cd bench && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m -run '^$$' ./... >/dev/null
	$(GO) test -race -count=1 -timeout 30m ./...
	$(GO) test -count=1 -timeout 20m -run 'Flood$$|Cost$$' ./cmd/brain
	$(MAKE) --no-print-directory client-check
	$(MAKE) --no-print-directory client-server-check
	$(MAKE) --no-print-directory bench-smoke

fork-check: $(WEB_DEPS) ## a fork's first week in a copy (rename, two features by the guide, the example removed: docs/fork.md), then the fork's whole make test, on the services this run has (BRAIN_TEST_DATABASE_URL, BRAIN_TEST_REDIS_URL)
	FORK_CHECK=all $(GO) test -count=1 -run '^TestForkFirstWeek$$' -v -timeout 90m .

jaeger: ## build Jaeger all-in-one $(JAEGER_VERSION) from source into $(JAEGER), only if it is missing (about 4 minutes); the tracing test runs the binary BRAIN_TEST_JAEGER names (.ci/run points it here). `go install` refuses this module, so it is built as a tool of a throwaway module
	@set -e; bin="$(abspath $(JAEGER))"; test -x "$$bin" && { echo "== Jaeger $(JAEGER_VERSION) is at $$bin"; exit 0; }; \
	echo "== building Jaeger $(JAEGER_VERSION) into $$bin"; \
	d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; mkdir -p "$$(dirname "$$bin")"; \
	cd "$$d" && $(GO) mod init x 2>/dev/null && \
	{ $(GO) get -tool github.com/jaegertracing/jaeger/cmd/jaeger@$(JAEGER_VERSION) 2>get.log || { cat get.log; exit 1; }; } && \
	$(GO) build -o "$$bin.tmp" github.com/jaegertracing/jaeger/cmd/jaeger && mv "$$bin.tmp" "$$bin"

openapi: ## regenerate openapi.json from the code (then run make client)
	$(GO) run ./cmd/brain openapi > openapi.json.tmp
	mv openapi.json.tmp openapi.json

client: $(WEB_DEPS) ## regenerate web/src/api/schema.d.ts and budgets.ts from openapi.json
	cd web && npm run --silent generate

client-check: $(WEB_DEPS) ## fail when schema.d.ts or budgets.ts is stale, the typed client does not compile or its tests fail
	@cd web && npm run --silent check || { echo "web/src/api/schema.d.ts or budgets.ts is stale, or the client does not compile: run make client"; exit 1; }
	@cd web && npm run --silent test
	@echo "client check: schema.d.ts and budgets.ts are current, the typed client compiles and its tests pass"

client-server-check: $(WEB_DEPS) ## the TypeScript client against a real brain (the dashboard built, then brain with it embedded): pacing without 429s, examples/ts-client end to end, the dashboard and /docs in Chromium
	cd web && npm run --silent test:server

lighthouse: $(WEB_DEPS) ## Lighthouse 12 (desktop preset, headless Chromium) on / (the login page, what a visitor sees before logging in) and /docs against a fresh brain: prints the four scores and the audits that lost points, fails under 95 for accessibility or best practices (make test runs this too). Performance is asserted (90 or more on /) only with LIGHTHOUSE_PERF=1, on a quiet machine: on busy cores it measures the machine
	cd web && LIGHTHOUSE_PERF=$(LIGHTHOUSE_PERF) npx vitest run --config vitest.server.config.ts test/lighthouse.test.ts

image: web ## the container image IMAGE (brain:latest) from Containerfile: the dashboard built, then the static binary, the CA certificates (CA_CERTS), /tmp and /data into a build context of their own (IMAGE_CONTEXT, not the repository), built by PODMAN with PODMAN_FLAGS (docs/operations.md)
	rm -rf $(IMAGE_CONTEXT)
	mkdir -p $(IMAGE_CONTEXT)/root/usr/local/bin $(IMAGE_CONTEXT)/root/etc/ssl/certs $(IMAGE_CONTEXT)/root/tmp $(IMAGE_CONTEXT)/data
	chmod 1777 $(IMAGE_CONTEXT)/root/tmp
	cp $(CA_CERTS) $(IMAGE_CONTEXT)/root/etc/ssl/certs/ca-certificates.crt
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(IMAGE_CONTEXT)/root/usr/local/bin/ ./cmd/brain
	$(PODMAN) build $(PODMAN_FLAGS) -f Containerfile -t $(IMAGE) $(IMAGE_CONTEXT)

$(WEB_DEPS): web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund

api-check: ## fail on changes to openapi.json that break clients (see cmd/apicheck)
	$(GO) run ./cmd/apicheck

bench: ## brain's benchmarks, and those beside their peers in bench/ (needs Redis for the Redis ones); figures go to BENCHMARKS.md
	BRAIN_TEST_REDIS_URL=$${BRAIN_TEST_REDIS_URL:-redis://127.0.0.1:6379/0} $(GO) test -run '^$$' -bench . -benchmem -count 6 -timeout 60m ./...
	cd bench && BRAIN_TEST_REDIS_URL=$${BRAIN_TEST_REDIS_URL:-redis://127.0.0.1:6379/0} $(GO) test -run '^$$' -bench . -benchmem -count 6 -timeout 60m ./...

bench-e2e: ## CPU per request and latency of whole requests, brain beside a bare huma + chi server (interleaved pairs); E2E_FLAGS="-redis URL -database-url URL" for the scale-out stores
	cd bench && $(GO) run ./e2e $(E2E_FLAGS)

soak: ## chaos soak: mixed traffic through haproxy to 3 replicas on PostgreSQL and a Redis Cluster while replicas, PostgreSQL and Redis masters fail (DURATION=5m; needs BRAIN_TEST_DATABASE_URL, redis-server, haproxy)
	BRAIN_SOAK_DURATION=$(or $(DURATION),5m) $(GO) test -count=1 -run '^TestSoak$$' -v -timeout 60m ./cmd/brain

bench-smoke: ## every benchmark of both modules run once (-benchtime 1x, -short: small data sets), so none rots; make test runs it. Its Redis keys start with brain-bench-smoke:, each benchmark's deleted as it ends
	BRAIN_TEST_REDIS_URL=$${BRAIN_TEST_REDIS_URL:-redis://127.0.0.1:6379/0} BRAIN_TEST_REDIS_PREFIX=brain-bench-smoke: \
	$(GO) test -count=1 -short -run '^$$' -bench . -benchtime 1x -timeout 15m ./... >/dev/null
	cd bench && BRAIN_TEST_REDIS_URL=$${BRAIN_TEST_REDIS_URL:-redis://127.0.0.1:6379/0} BRAIN_TEST_REDIS_PREFIX=brain-bench-smoke: \
	$(GO) test -count=1 -short -run '^$$' -bench . -benchtime 1x -timeout 15m ./... >/dev/null
	@echo "bench smoke: every benchmark ran once"

size: ## non-test lines of Go per package of the main module (bench/ and generated files aside) and their total; fails above SIZE_BUDGET
	@git ls-files '*.go' ':!:*_test.go' ':!:bench/' | xargs grep -L '^// Code generated' | xargs wc -l | \
	awk -v budget=$(SIZE_BUDGET) '$$2 != "total" { d = $$2; if (!sub("/[^/]*$$", "", d)) d = "."; n[d] += $$1; t += $$1 } \
	END { for (d in n) printf "%6d %s\n", n[d], d | "sort -n"; close("sort -n"); printf "%6d total, budget %d\n", t, budget; \
	if (t > budget) { print "size: over budget by " t - budget " lines"; exit 1 } }'

lint: ## gofmt, go vet, staticcheck (pinned, with ST1000: package comments), no file note above `package`, where go doc would take it for the package's, and actionlint (pinned) on the GitHub workflows
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@out=$$(for f in $$(git ls-files '*.go'); do awk '/^\/\//{ if (g == "") g = $$0; next } /^package /{ if (g != "" && g !~ /^\/\/ (Package|Command) /) print FILENAME; exit } { g = "" }' $$f; done); \
	if [ -n "$$out" ]; then echo "a comment above package that is not the package's doc (leave a blank line after it):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -checks inherit,ST1000 ./...
	cd bench && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -checks inherit,ST1000 ./...
	$(GO) run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12 .github/workflows/*.yml

rename: ## make rename MODULE=example.com/you/svc NAME=svc: give a fork its own module path and (NAME) its own product name — env prefix, cookie, Redis prefix, metrics, database file, messages, cmd/NAME — and accept in openapi-breaking.ignore the breaks the new name makes (docs/fork.md); either alone works too
	@test -n "$(MODULE)$(NAME)" || { echo "usage: make rename MODULE=example.com/you/svc NAME=svc"; exit 2; }
	@set -e; if [ -n "$(MODULE)" ]; then old=$$($(GO) list -m); \
	$(GO) mod edit -module "$(MODULE)"; \
	(cd bench && $(GO) mod edit -module "$(MODULE)/bench" -droprequire "$$old" -require "$(MODULE)@v0.0.0" -dropreplace "$$old" -replace "$(MODULE)=../"); \
	for f in $$(grep -rlF --include='*.go' --include='*.md' "\"$$old" .); do \
		sed -i.bak -e "s#\"$$old\"#\"$(MODULE)\"#g" -e "s#\"$$old/#\"$(MODULE)/#g" "$$f"; rm "$$f.bak"; \
	done; \
	$(GO) build ./...; (cd bench && $(GO) vet ./...); \
	echo "module renamed from $$old to $(MODULE)"; fi
	@set -e; if [ -n "$(NAME)" ]; then \
	old=$$(sed -n 's/^const Name = "\(.*\)"$$/\1/p' internal/product/product.go); \
	$(GO) run ./internal/product/rename "$(NAME)"; \
	$(GO) build ./...; (cd bench && $(GO) vet ./...); \
	$(GO) run ./cmd/$(NAME) openapi > openapi.json.tmp; mv openapi.json.tmp openapi.json; \
	if git rev-parse -q --verify HEAD >/dev/null 2>&1; then $(GO) run ./cmd/apicheck -accept "renamed from $$old to $(NAME) (make rename)"; fi; \
	echo "openapi.json regenerated; run make client to regenerate the TypeScript client (web/src/api)"; fi
