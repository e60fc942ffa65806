# porthole's two quick-start commands are `make demo` and `make test`.
# Both install the Temporal CLI into a cache folder this Makefile owns,
# once, and reuse it after that. `make unit` is the fast tier, which needs
# nothing but Go.

# Every build, test and tool here runs on this Go, which the module proxy
# serves as golang.org/toolchain and the go command fetches once into the
# module cache. go.mod's toolchain line names the same; it alone is not
# enough where GOTOOLCHAIN=local is set, as on these machines. Raise both
# together (README, Updating).
GO_TOOLCHAIN := go1.26.11
export GOTOOLCHAIN := $(GO_TOOLCHAIN)

TEMPORAL_CLI_VERSION := v1.5.1
CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/porthole
TEMPORAL_CLI := $(CACHE_DIR)/temporal-cli-$(TEMPORAL_CLI_VERSION)/temporal
# The tests and the demo find the CLI here.
export PORTHOLE_TEMPORAL_CLI := $(TEMPORAL_CLI)

# The build's stamp (cmd/porthole/version.go): VERSION when given, else
# `git describe --always --dirty` (a clone without tags still names its
# commit); the commit and its time, never the build's.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
COMMIT_TIME := $(shell git log -1 --format=%cI 2>/dev/null)
MODIFIED := $(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo true)
STAMP := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.commitTime=$(COMMIT_TIME) -X main.modified=$(MODIFIED)

# cyclonedx-gomod writes a release's SBOM; built once into the cache.
CYCLONEDX_VERSION := v1.10.0
CYCLONEDX := $(CACHE_DIR)/cyclonedx-gomod-$(CYCLONEDX_VERSION)/cyclonedx-gomod
export PORTHOLE_CYCLONEDX := $(CYCLONEDX)

# cosign signs and attests a release's image; built once into the cache.
# v2.6.5 exactly: v3 reaches for the network by default.
COSIGN_VERSION := v2.6.5
COSIGN := $(CACHE_DIR)/cosign-$(COSIGN_VERSION)/cosign
export PORTHOLE_COSIGN := $(COSIGN)

# The omniwitness (transparency-dev/witness), which cosigns porthole's
# audit checkpoints in the witness tests beside porthole's own witness.
OMNIWITNESS_VERSION := v0.0.0-20260720115447-2e1c6971d19e
OMNIWITNESS := $(CACHE_DIR)/omniwitness-2e1c6971d19e/omniwitness
export PORTHOLE_OMNIWITNESS := $(OMNIWITNESS)

# porthole-release builds, pushes and checks the release image (a module
# of its own: go-containerregistry stays out of porthole's).
RELEASE_TOOL := bin/porthole-release
export PORTHOLE_RELEASE_TOOL := $(abspath $(RELEASE_TOOL))

# Third-party MCP clients from the npm registry (conformance suite, MCP
# Inspector, TypeScript SDK, and a Node 22 for the suite), installed once per
# lock file into the cache.
CLIENTS_SRC := cmd/porthole/testdata/clients
CLIENTS_DIR := $(CACHE_DIR)/clients-$(shell sha256sum $(CLIENTS_SRC)/package-lock.json | cut -c1-12)
export PORTHOLE_CLIENTS_DIR := $(CLIENTS_DIR)

# The authorization server the OAuth tests run: panva's oidc-provider and
# the Node 22 LTS it supports (it warns that Node 20 is unsupported),
# installed once per lock file into the cache.
OIDC_SRC := gateway/oauth/oidctest/testdata
OIDC_DIR := $(CACHE_DIR)/oidc-provider-$(shell sha256sum $(OIDC_SRC)/package-lock.json | cut -c1-12)
export PORTHOLE_OIDC_DIR := $(OIDC_DIR)

# helm renders the chart in the tests; built from the Go module proxy once.
HELM_VERSION := v3.22.0
HELM := $(CACHE_DIR)/helm-$(HELM_VERSION)/helm
export PORTHOLE_HELM := $(HELM)

# staticcheck runs in make check; built from the Go module proxy once. A
# release checks only the Go versions it knows: 2026.1 (v0.7.0) was the
# first to know go.mod's Go 1.26; v0.8.2 is 2026.2.2, the newest.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CACHE_DIR)/staticcheck-$(STATICCHECK_VERSION)/staticcheck

# govulncheck, the vulnerability gate of make check (cmd/porthole-vulncheck
# runs it), built once into the cache; and the database it reads, built
# once per pin from golang.org/x/vulndb's OSV entries (data/osv, which the
# module proxy serves) with vulndb's own cmd/indexdb, into govulncheck's v1
# layout. README, "Updating Go and the vulnerability database", says how to
# move either pin.
GOVULNCHECK_VERSION := v1.10.0
GOVULNCHECK := $(CACHE_DIR)/govulncheck-$(GOVULNCHECK_VERSION)/govulncheck
export PORTHOLE_GOVULNCHECK := $(GOVULNCHECK)
VULNDB_VERSION := v0.0.0-20261105234957-e22db6528018
VULNDB := $(CACHE_DIR)/vulndb-$(VULNDB_VERSION)/db
export PORTHOLE_VULNDB := $(VULNDB)

# Jaeger, the trace backend the tracing tests export to: the v2 binary
# (built on the OpenTelemetry Collector), built from the Go module proxy
# once, with `go get -tool` in a tools module of its own in the cache (about
# 8 minutes cold on 2 cores, 121 MB).
JAEGER_VERSION := v1.76.0
JAEGER := $(CACHE_DIR)/jaeger-$(JAEGER_VERSION)/jaeger
export PORTHOLE_JAEGER := $(JAEGER)

# Chromium, the browser the HTML report's test opens its page in through
# the DevTools protocol (chromedp): Debian's, which make chromium installs.
CHROMIUM ?= /usr/bin/chromium
export PORTHOLE_CHROMIUM := $(CHROMIUM)

GO ?= go
FUZZTIME ?= 10s

.PHONY: build binary cross release release-tool cosign omniwitness cyclonedx ssh-keygen chromium report-screenshot reproducible demo test unit check vulncheck govulncheck vulndb staticcheck clients oidc-provider helm temporal-cli redis-server jaeger fuzz bench bench-scale bench-scale-smallest bench-gitleaks bench-links soak clean

## build: the porthole binary, as the Dockerfile builds it but with symbols (the image strips them), into BUILD_OUT (default bin/porthole)
BUILD_OUT ?= bin/porthole
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(STAMP)" -o $(BUILD_OUT) ./cmd/porthole

## binary: one stamped static binary for RELEASE_OS/RELEASE_ARCH into OUT, as a release builds each
RELEASE_OS ?= linux
RELEASE_ARCH ?= amd64
binary:
	@test -n "$(OUT)" || { echo "make binary needs OUT=path"; exit 2; }
	CGO_ENABLED=0 GOOS=$(RELEASE_OS) GOARCH=$(RELEASE_ARCH) GOAMD64=v1 GOARM64=v8.0 GOFLAGS=-buildvcs=false $(GO) build -trimpath -ldflags "-s -w $(STAMP)" -o "$(OUT)" ./cmd/porthole

## cross: compile porthole for each release target (nothing written): what `make release` needs builds everywhere
cross:
	for t in linux/arm64 darwin/arm64; do CGO_ENABLED=0 GOOS=$${t%/*} GOARCH=$${t#*/} GOFLAGS=-buildvcs=false $(GO) build -trimpath -o /dev/null ./cmd/porthole || exit 1; done

## release: VERSION=x.y.z RELEASE_SIGNING_KEY=path [RELEASE_IMAGE=registry/repo RELEASE_COSIGN_KEY=path RELEASE_COSIGN_PUB=path]: binaries for linux/amd64, linux/arm64, darwin/arm64, an SBOM each, the image index of the linux ones (image/, IMAGE), the chart by that digest, SHA256SUMS and its signature, in dist/VERSION; with RELEASE_IMAGE, the image pushed, signed and attested with cosign
release: $(CYCLONEDX) $(COSIGN) $(HELM) release-tool ssh-keygen
	@test "$(MODIFIED)" != true || { echo "make release: the tree has uncommitted or untracked files; a release is built from a commit"; exit 2; }
	VERSION="$(VERSION)" MAKE="$(MAKE)" CYCLONEDX="$(CYCLONEDX)" RELEASE_SIGNING_KEY="$(RELEASE_SIGNING_KEY)" \
		RELEASE_TOOL="$(abspath $(RELEASE_TOOL))" HELM="$(HELM)" COSIGN="$(COSIGN)" RELEASE_IMAGE="$(RELEASE_IMAGE)" \
		RELEASE_COSIGN_KEY="$(RELEASE_COSIGN_KEY)" RELEASE_COSIGN_PUB="$(RELEASE_COSIGN_PUB)" sh deploy/release/release.sh

## release-tool: bin/porthole-release, which builds, pushes and checks the release image (its own module, cmd/porthole-release)
release-tool:
	cd cmd/porthole-release && CGO_ENABLED=0 $(GO) build -trimpath -o $(abspath $(RELEASE_TOOL)) .

## cosign: cosign, which signs and attests the release image, built once into the cache
cosign: $(COSIGN)
$(COSIGN):
	mkdir -p $(dir $(COSIGN))
	cd $(dir $(COSIGN)) && GOBIN=$(dir $(COSIGN)) GOFLAGS=-mod=mod $(GO) install github.com/sigstore/cosign/v2/cmd/cosign@$(COSIGN_VERSION)

## omniwitness: transparency-dev's witness, built once into the cache, which the witness tests run beside porthole's
omniwitness: $(OMNIWITNESS)
$(OMNIWITNESS):
	mkdir -p $(dir $(OMNIWITNESS))
	cd $(dir $(OMNIWITNESS)) && GOBIN=$(dir $(OMNIWITNESS)) GOFLAGS=-mod=mod $(GO) install github.com/transparency-dev/witness/cmd/omniwitness@$(OMNIWITNESS_VERSION)

## cyclonedx: the SBOM generator a release uses, built once into the cache
cyclonedx: $(CYCLONEDX)
$(CYCLONEDX):
	mkdir -p $(dir $(CYCLONEDX))
	cd $(dir $(CYCLONEDX)) && GOBIN=$(dir $(CYCLONEDX)) GOFLAGS=-mod=mod $(GO) install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_VERSION)

## reproducible: two builds of this commit for linux/amd64 and linux/arm64, from clones at different paths with separate empty build caches, must be the same bytes and make the same release image index
reproducible:
	GO=$(GO) sh .ci/reproducible

## demo: a Temporal dev server with sample workflows, a token, and porthole serve
demo: $(TEMPORAL_CLI) build
	$(GO) build -o bin/porthole-demo ./cmd/porthole-demo
	./bin/porthole-demo

## test: formatting, vet, and every test with the race detector
test: $(TEMPORAL_CLI) clients oidc-provider redis-server ssh-keygen chromium $(JAEGER) $(HELM) $(CYCLONEDX) $(COSIGN) $(OMNIWITNESS) release-tool check
	$(GO) test -race -count=1 ./...

## unit: every test that needs no Temporal dev server, npm clients, oidc-provider, Redis, Jaeger, Chromium or helm, with the race detector; -short skips the rest, naming what each needs
unit:
	$(GO) test -short -race -count=1 ./...

## check: formatting, go.mod and go.sum as go mod tidy leaves them, vet, staticcheck, and the vulnerability gate
check: $(STATICCHECK) vulncheck
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	@if ! untidy="$$($(GO) mod tidy -diff)"; then echo "go.mod or go.sum is not what 'go mod tidy' writes; run it and commit the change:"; echo "$$untidy"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@# The release tool is a module of its own: held to the same.
	cd cmd/porthole-release && { $(GO) mod tidy -diff >/dev/null || { echo "cmd/porthole-release: go.mod or go.sum is not what 'go mod tidy' writes"; exit 1; }; } && $(GO) vet ./... && $(STATICCHECK) ./...

## vulncheck: govulncheck over porthole against the pinned database; a called vulnerability fails unless cmd/porthole-vulncheck/accepted.txt accepts it
vulncheck: $(GOVULNCHECK) vulndb
	$(GO) run ./cmd/porthole-vulncheck -govulncheck $(GOVULNCHECK) -db $(VULNDB) -accepted cmd/porthole-vulncheck/accepted.txt ./...

## govulncheck: the govulncheck make vulncheck runs, built once into the cache
govulncheck: $(GOVULNCHECK)
$(GOVULNCHECK):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)

## vulndb: the vulnerability database of VULNDB_VERSION in govulncheck's v1 layout, built once into the cache
vulndb: $(VULNDB)/index/vulns.json
$(VULNDB)/index/vulns.json:
	@echo "== building the vulnerability database golang.org/x/vulndb@$(VULNDB_VERSION) into $(VULNDB) (once per pin)"
	rm -rf $(VULNDB) $(VULNDB).tmp && mkdir -p $(dir $(VULNDB))
	cd $(dir $(VULNDB)) && GOBIN=$(abspath $(dir $(VULNDB))) GOFLAGS=-mod=mod $(GO) install golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION)
	src=$$(cd $(dir $(VULNDB)) && $(GO) mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p') && \
		test -d "$$src/data/osv" && $(dir $(VULNDB))indexdb -vulns "$$src/data/osv" -out $(VULNDB).tmp
	mv $(VULNDB).tmp $(VULNDB)

## jaeger: the Jaeger v2 binary the tracing tests and the bench export to, built once into the cache
jaeger: $(JAEGER)
$(JAEGER):
	@echo "== building Jaeger $(JAEGER_VERSION) into $(dir $(JAEGER)) (once; about 8 minutes cold)"
	rm -rf $(dir $(JAEGER))tools && mkdir -p $(dir $(JAEGER))tools
	cd $(dir $(JAEGER))tools && $(GO) mod init porthole.invalid/jaeger-tool >/dev/null 2>&1 && \
		$(GO) get -tool github.com/jaegertracing/jaeger/cmd/jaeger@$(JAEGER_VERSION) && \
		GOBIN=$(abspath $(dir $(JAEGER))) $(GO) install tool
	@test -x $(JAEGER)

# apt_install runs the check $(1), and when it fails installs the package
# $(2) from Debian's packages with apt-get's options $(3): as root only
# (anyone else is told the command), and with apt-get update only when the
# package lists turn out stale.
define apt_install
@$(1) >/dev/null 2>&1 || { \
	if [ "$$(id -u)" != 0 ]; then echo "$(2) is missing: apt-get install -y $(2) (as root), then run make again"; exit 1; fi; \
	echo "== installing $(2) from Debian's packages"; \
	DEBIAN_FRONTEND=noninteractive apt-get install -y $(3) $(2) >/dev/null 2>&1 || \
	{ apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y $(3) $(2) >/dev/null; }; }
endef

## redis-server: Debian's redis-server, which the tests start on free loopback ports, installed with apt-get when missing (as root; the package's service is not started)
redis-server:
	$(call apt_install,command -v redis-server,redis-server,--no-install-recommends)
	@redis-server --version

## ssh-keygen: OpenSSH's ssh-keygen, which signs and verifies a release (and its test), from Debian's packages when missing
ssh-keygen:
	$(call apt_install,command -v ssh-keygen,openssh-client,--no-install-recommends)

## chromium: Debian's Chromium, in which the HTML report's test opens its page, installed with apt-get when missing (as root; with the
## packages it recommends, fonts-liberation among them: the test and docs/audit-report.png were made with them)
chromium:
	$(call apt_install,test -x $(CHROMIUM),chromium,)
	@$(CHROMIUM) --version 2>/dev/null

## report-screenshot: docs/audit-report.png, the HTML report of a synthetic week as Chromium draws it
report-screenshot: chromium
	PORTHOLE_DOCS_SCREENSHOT=$(abspath docs/audit-report.png) $(GO) test -count=1 -run '^TestTheReportPageForTheDocs$$' ./cmd/porthole/

## fuzz: each fuzz target for FUZZTIME (default 10s)
fuzz:
	GO=$(GO) .ci/fuzz-target FuzzClean ./redact/quote/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzCleanIsTheRuneByRuneClean ./redact/quote/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzOfJSON ./redact/quote/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzRedactJSON ./redact/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzFastPathSkipsNothing ./redact/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzDetectorsMatchOnlyAtTheirStarts ./redact/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzCut ./redact/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzParseTextIsTextsInverse ./audit/merkle/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzARecordProofReadsAsItIsWritten ./audit/review/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzATreeEdgeDecodesOrIsRefused ./audit/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzARequestParsesOrIsRefused ./audit/witness/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzAuditLine ./audit/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzRecordEncodingAgreesWithZap ./audit/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzPageWarner ./audit/review/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzAPageIsThePagesOwn ./audit/review/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzEntryScannerAgreesWithUnmarshal ./audit/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzQuotedSizeIsWhatTheRecordWrites ./audit/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzHeadersAgreeWithTheGoSDK ./gateway/rpcdecode/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzModernMetaTheGoSDKAccepts ./gateway/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzMarshalToolResultIsTheGoSDKs ./gateway/fastpath/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzOnlyWhatTheIssuerSignedIsAccepted ./gateway/oauth/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzKeysAndIssuersParseOrRefuse ./gateway/oauth/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzScreenQuery ./policy/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzScreenAgreesWithServerTokenizer ./policy/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzDecode ./gateway/rpcdecode/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzDecodeAgreesWithReference ./gateway/rpcdecode/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzParseRoster ./gateway/upstream/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzParseAgreesWithThePortholeBeforeExpiries ./gateway/tokens/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzPayloadsUndecodedReadsWhatProtoReads ./temporal/ $(FUZZTIME)
	GO=$(GO) .ci/fuzz-target FuzzOpenRefusesWhatItDidNotMake ./gateway/pseudonym/ $(FUZZTIME)

## bench: porthole side by side with the SDK and a bare go-sdk server; writes docs/performance.md
BENCH_DURATION ?= 5s
bench: $(TEMPORAL_CLI) oidc-provider redis-server $(JAEGER) build
	$(GO) build -o bin/porthole-bench ./cmd/porthole-bench
	./bin/porthole-bench -duration $(BENCH_DURATION) -porthole bin/porthole

## bench-scale: how porthole's cost grows with the work (history length, list pages, principals, answer size, audit trail size), porthole beside the SDK, and its redaction beside gitleaks; seeds a dev-server database into the cache once; writes its section of docs/performance.md and docs/performance-scale.svg
SCALE_DURATION ?= 20s
bench-scale: $(TEMPORAL_CLI) build bench-gitleaks
	$(GO) build -o bin/porthole-bench ./cmd/porthole-bench
	./bin/porthole-bench scale -duration $(SCALE_DURATION) -porthole bin/porthole -gitleaks bin/porthole-bench-gitleaks -cache $(CACHE_DIR)

## bench-scale-smallest: the smallest size of each curve, briefly, the report set aside (.ci/run runs it so that no curve rots)
bench-scale-smallest: $(TEMPORAL_CLI) build bench-gitleaks
	$(GO) build -o bin/porthole-bench ./cmd/porthole-bench
	out=$$(mktemp -d) && { ./bin/porthole-bench scale -smallest -duration 2s -rounds 1 -porthole bin/porthole -gitleaks bin/porthole-bench-gitleaks -cache $(CACHE_DIR) -out $$out/performance.md -svg $$out/scale.svg; status=$$?; rm -r $$out; exit $$status; }

## bench-gitleaks: bin/porthole-bench-gitleaks, gitleaks timed over a corpus, which bench-scale runs beside porthole's redactor; built from its own module (cmd/porthole-bench/gitleaks), so gitleaks stays out of porthole's
bench-gitleaks:
	cd cmd/porthole-bench/gitleaks && $(GO) build -o $(abspath bin/porthole-bench-gitleaks) .

## soak: the load and fault tests for SOAK (default 60s) each: 64 clients, Temporal stopped and restarted, slow Temporal, a stalled audit sink, three replicas sharing Redis with Redis stopped and restarted
SOAK ?= 60s
soak: $(TEMPORAL_CLI) redis-server
	PORTHOLE_SOAK=$(SOAK) $(GO) test -count=1 -v -run 'TestSoakLoad|TestSoakThreeReplicasSharingRedis|TestTemporalStoppedAndStartedAgain|TestSlowTemporal|TestAuditSink|TestAnAuditSink' ./cmd/porthole/

## bench-links: the cost of each link of the chain alone, as Go benchmarks (the shared-limit charge against a real redis-server among them)
bench-links: redis-server
	$(GO) test -run '^$$' -bench . -benchmem ./redact/ ./audit/ ./audit/review/ ./policy/ ./gateway/ ./gateway/rpcdecode/ ./gateway/tokens/ ./gateway/limit/redislimit/

## clients: install the npm clients the interoperability tests run
clients: $(CLIENTS_DIR)/.installed

$(CLIENTS_DIR)/.installed: $(CLIENTS_SRC)/package.json $(CLIENTS_SRC)/package-lock.json
	@mkdir -p $(CLIENTS_DIR)
	cp $(CLIENTS_SRC)/package.json $(CLIENTS_SRC)/package-lock.json $(CLIENTS_DIR)/
	cd $(CLIENTS_DIR) && npm install --no-audit --no-fund --ignore-scripts --no-save
	touch $@

## oidc-provider: install the authorization server the OAuth tests run
oidc-provider: $(OIDC_DIR)/.installed

$(OIDC_DIR)/.installed: $(OIDC_SRC)/package.json $(OIDC_SRC)/package-lock.json
	@mkdir -p $(OIDC_DIR)
	cp $(OIDC_SRC)/package.json $(OIDC_SRC)/package-lock.json $(OIDC_DIR)/
	cd $(OIDC_DIR) && npm install --no-audit --no-fund --ignore-scripts --no-save
	touch $@

## helm: install helm, which the chart tests run
helm: $(HELM)

$(HELM):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

## staticcheck: install staticcheck, which make check runs
staticcheck: $(STATICCHECK)

$(STATICCHECK):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## temporal-cli: install the Temporal CLI into the cache (about 6 minutes cold)
temporal-cli: $(TEMPORAL_CLI)

$(TEMPORAL_CLI):
	@echo "Installing the Temporal CLI $(TEMPORAL_CLI_VERSION) into $(dir $@); the first build takes about six minutes."
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION)

clean:
	rm -rf bin/
