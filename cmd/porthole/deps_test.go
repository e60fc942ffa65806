package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/porthole-dev/porthole"

// goList runs `go list` with a template over patterns and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %v: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// TestOnlyTheTemporalPackageImportsTemporal holds the first import rule of
// docs/architecture.md: go.temporal.io is imported only under temporal/, and never by
// temporal/read, whose result types the gateway uses.
func TestOnlyTheTemporalPackageImportsTemporal(t *testing.T) {
	t.Parallel()
	violations := importViolations(goList(t, "-f", `{{.ImportPath}}{{range .Imports}} {{$.ImportPath}}>{{.}}{{end}}`, module+"/..."))
	for _, v := range violations {
		t.Error(v)
	}
}

// importExceptions may import the Temporal SDK outside temporal/, each for
// its reason. None is part of the porthole binary (TestBinaryCannotWriteWorkflows).
var importExceptions = map[string]string{
	module + "/cmd/porthole-bench": "its floor is the Temporal SDK called directly, and its baseline a bare server calling the SDK",
}

// importViolations reads "pkg>import" pairs and reports the ones that break
// the rule. It is separate so that the test can show it catches a planted
// violation.
func importViolations(fields []string) []string {
	var out []string
	for _, f := range fields {
		pkg, imp, ok := strings.Cut(f, ">")
		if !ok || !strings.HasPrefix(imp, "go.temporal.io/") || importExceptions[pkg] != "" {
			continue
		}
		inTemporal := pkg == module+"/temporal" || strings.HasPrefix(pkg, module+"/temporal/")
		if !inTemporal || pkg == module+"/temporal/read" {
			out = append(out, pkg+" imports "+imp+": only the temporal package may import the Temporal SDK")
		}
	}
	return out
}

func TestImportRuleCatchesAPlantedViolation(t *testing.T) {
	t.Parallel()
	planted := []string{
		module + "/gateway>go.temporal.io/sdk/client",
		module + "/temporal/read>go.temporal.io/api/common/v1",
		module + "/temporal>go.temporal.io/sdk/client",
	}
	if got := importViolations(planted); len(got) != 2 {
		t.Fatalf("importViolations found %d of the 2 planted violations: %v", len(got), got)
	}
}

// TestGatewayCannotReachTemporalOrItsCredentials holds the second rule: the
// gateway's whole dependency graph holds no Temporal module and not the
// temporal package, where the configuration with its credentials lives.
func TestGatewayCannotReachTemporalOrItsCredentials(t *testing.T) {
	t.Parallel()
	for _, dep := range goList(t, "-deps", module+"/gateway", module+"/policy", module+"/redact", module+"/audit") {
		if strings.HasPrefix(dep, "go.temporal.io/") || dep == module+"/temporal" || strings.HasPrefix(dep, "google.golang.org/grpc") {
			t.Errorf("the gateway side depends on %s", dep)
		}
	}
}

// TestBinaryCannotWriteWorkflows: the porthole binary's graph holds no worker,
// no test server and no seeder. Code that writes to Temporal lives outside it.
func TestBinaryCannotWriteWorkflows(t *testing.T) {
	t.Parallel()
	banned := map[string]string{
		"go.temporal.io/sdk/worker":       "runs workflows and activities",
		"go.temporal.io/sdk/workflow":     "is workflow code",
		"go.temporal.io/sdk/activity":     "is activity code",
		"go.temporal.io/sdk/testsuite":    "starts servers and test environments",
		module + "/temporal/temporaltest": "seeds workflows",
		// A copy of another revision of the query parser, for tests only:
		// the binary screens with one parser, and that one is v0.1.0.
		module + "/policy/internal/serversql": "is the Temporal server's tokenizer, copied for tests",
		// The authorization server of the OAuth tests.
		module + "/gateway/oauth/oidctest": "starts oidc-provider, and its clients' secrets are in its source",
		// The Redis of the tests and the bench.
		module + "/gateway/limit/redislimit/redistest": "starts redis-server",
		// The trace backend of the tests and the bench.
		module + "/gateway/tracetest": "starts Jaeger",
		// The hostile upstream of the bounds tests.
		module + "/gateway/upstream/hostiletest": "is a hostile MCP server",
		// What the audit trail's tests share.
		module + "/audit/audittest": "is test support",
		// The certificates of the TLS tests.
		module + "/gateway/tlsserver/tlstest": "makes test certificates",
		// The benches' baseline server.
		module + "/gateway/baretest": "is an MCP server without porthole's hardening",
		// The browser driver of the HTML report's test.
		"github.com/chromedp/chromedp": "drives a browser, for the HTML report's test only",
	}
	deps := goList(t, "-deps", module+"/cmd/porthole")
	if len(deps) < 50 {
		t.Fatalf("go list returned %d dependencies; the check would be vacuous", len(deps))
	}
	for _, dep := range deps {
		if why, ok := banned[dep]; ok {
			t.Errorf("the porthole binary depends on %s, which %s", dep, why)
		}
		if strings.HasPrefix(dep, module+"/policy/internal/serversql/") {
			t.Errorf("the porthole binary depends on %s, a part of the server's tokenizer copied for tests", dep)
		}
	}
}

// gitleaksModule is the outside anchor of porthole-bench's redaction
// throughput, and gitleaksVersion the version it is measured at.
const (
	gitleaksModule  = "github.com/zricethezav/gitleaks/v8"
	gitleaksVersion = "v8.30.1"
)

// TestGitleaksIsNoDependencyOfPorthole: gitleaks, which porthole-bench
// scale runs beside porthole's redactor, lives in a module of its own
// (cmd/porthole-bench/gitleaks) that requires it at gitleaksVersion, and
// nothing of it enters porthole's module graph.
func TestGitleaksIsNoDependencyOfPorthole(t *testing.T) {
	t.Parallel()
	mods := goList(t, "-m", "all")
	if !slices.Contains(mods, module) {
		t.Fatalf("go list -m all does not name %s: the check would be vacuous", module)
	}
	for _, m := range mods {
		if strings.HasPrefix(m, "github.com/zricethezav/gitleaks") {
			t.Errorf("porthole's module graph holds %s: gitleaks belongs in cmd/porthole-bench/gitleaks's module only", m)
		}
	}
	// go mod edit -json reads the go.mod alone: nothing is downloaded.
	out, err := exec.Command("go", "-C", "../porthole-bench/gitleaks", "mod", "edit", "-json").Output()
	if err != nil {
		t.Fatalf("go mod edit -json in cmd/porthole-bench/gitleaks: %v", err)
	}
	var gomod struct {
		Module  struct{ Path string }
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &gomod); err != nil {
		t.Fatal(err)
	}
	if want := module + "/cmd/porthole-bench/gitleaks"; gomod.Module.Path != want {
		t.Errorf("cmd/porthole-bench/gitleaks/go.mod is the module %q, not %q", gomod.Module.Path, want)
	}
	version := ""
	for _, r := range gomod.Require {
		if r.Path == gitleaksModule {
			version = r.Version
		}
	}
	if version != gitleaksVersion {
		t.Errorf("cmd/porthole-bench/gitleaks/go.mod requires %s at %q, not %s", gitleaksModule, version, gitleaksVersion)
	}
}

// leafImports are the packages each of the gateway's and redact's leaf
// mechanisms, and the other packages that depend on little, may import
// beyond the standard library: a mechanism depends on nothing of the
// gateway, and on no library its job does not need (docs/architecture.md).
var leafImports = map[string][]string{
	module + "/gateway/rpcdecode": {"github.com/modelcontextprotocol/go-sdk/jsonrpc"},
	module + "/gateway/tokens":    {"go.uber.org/zap"},
	module + "/gateway/limit":     {"golang.org/x/time/rate", module + "/policy"},
	module + "/redact":            {},
	module + "/redact/quote":      {},
	// policy's disclosure profiles name the classes of temporal/read's
	// fields and redact's personal-data detectors.
	module + "/policy":       {"github.com/temporalio/sqlparser", module + "/temporal/read", module + "/redact"},
	module + "/audit":        {module + "/audit/merkle", module + "/audit/witness", "golang.org/x/mod/sumdb/note", "golang.org/x/mod/sumdb/tlog"},
	module + "/audit/merkle": {"golang.org/x/mod/sumdb/note", "golang.org/x/mod/sumdb/tlog"},
	// audit/review holds a trail to the checkpoints its witnesses cosigned.
	module + "/audit/review":  {module + "/audit", module + "/audit/merkle", module + "/audit/witness", "golang.org/x/mod/sumdb/note", "golang.org/x/mod/sumdb/tlog"},
	module + "/audit/witness": {module + "/audit/merkle", "golang.org/x/mod/sumdb/note", "golang.org/x/mod/sumdb/tlog"},
	module + "/temporal/read": {module + "/redact/quote"},
	module + "/gateway/upstream": {"github.com/modelcontextprotocol/go-sdk", "go.uber.org/zap", "go.yaml.in/yaml/v3",
		"golang.org/x/sync/semaphore", "golang.org/x/time/rate", module + "/gateway/tlsclient", module + "/policy", module + "/redact/quote"},
	module + "/gateway/pagetoken": {},
	module + "/gateway/pseudonym": {"github.com/tink-crypto/tink-go/v2"},
	module + "/gateway/tlsclient": {},
	module + "/gateway/tlsserver": {"go.uber.org/zap", module + "/gateway/tlsclient"},
	module + "/gateway/fastpath":  {"github.com/modelcontextprotocol/go-sdk", module + "/gateway/rpcdecode"},
}

// homes say where the code of a kind lives, and that nothing else imports
// its libraries: the OAuth verifier (JWT and OAuth libraries) in
// gateway/oauth, a limiter shared by replicas (a Redis client) in
// gateway/limit/redislimit. Each prefix is an import path a package of that
// kind would use.
var homes = []struct {
	home     string
	prefixes []string
}{
	{module + "/gateway/oauth", []string{"github.com/golang-jwt/", "github.com/go-jose/", "gopkg.in/square/go-jose", "github.com/lestrrat-go/jwx", "golang.org/x/oauth2", "github.com/coreos/go-oidc"}},
	{module + "/gateway/limit/redislimit", []string{"github.com/redis/", "github.com/go-redis/"}},
	{module + "/gateway/pseudonym", []string{"github.com/tink-crypto/"}},
}

// leafViolations reads "pkg>import" pairs and reports imports that break
// leafImports or homes.
func leafViolations(fields []string) []string {
	var out []string
	for _, f := range fields {
		pkg, imp, ok := strings.Cut(f, ">")
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(imp, "/")
		std := !strings.Contains(first, ".")
		if allowed, isLeaf := leafImports[pkg]; isLeaf && !std && !slices.Contains(allowed, imp) &&
			!slices.ContainsFunc(allowed, func(a string) bool { return strings.HasPrefix(imp, a+"/") }) {
			out = append(out, pkg+" imports "+imp+", which its job does not need")
		}
		for _, h := range homes {
			inHome := pkg == h.home || strings.HasPrefix(pkg, h.home+"/")
			if !inHome && slices.ContainsFunc(h.prefixes, func(p string) bool { return strings.HasPrefix(imp, p) }) {
				out = append(out, pkg+" imports "+imp+", which only "+h.home+" may import")
			}
		}
	}
	return out
}

// TestLeafPackagesImportOnlyWhatTheirJobNeeds holds the leaf mechanisms to
// their imports, and the OAuth and Redis libraries to their homes.
func TestLeafPackagesImportOnlyWhatTheirJobNeeds(t *testing.T) {
	t.Parallel()
	fields := goList(t, "-f", `{{.ImportPath}}{{range .Imports}} {{$.ImportPath}}>{{.}}{{end}}`, module+"/...")
	for leaf := range leafImports {
		if !slices.Contains(fields, leaf) {
			t.Errorf("the leaf package %s is not in the module: the rule would be vacuous", leaf)
		}
	}
	for _, v := range leafViolations(fields) {
		t.Error(v)
	}
}

func TestLeafRuleCatchesPlantedViolations(t *testing.T) {
	t.Parallel()
	planted := []string{
		module + "/gateway/rpcdecode>go.uber.org/zap",
		module + "/gateway/tokens>github.com/porthole-dev/porthole/audit",
		module + "/gateway>github.com/redis/go-redis/v9",
		module + "/gateway/limit>github.com/golang-jwt/jwt/v5",
		// Allowed: the standard library, a listed import, a home's own.
		module + "/gateway/limit>golang.org/x/time/rate",
		module + "/redact>bytes",
		module + "/gateway/oauth>github.com/golang-jwt/jwt/v5",
		module + "/gateway/limit/redislimit>github.com/redis/go-redis/v9",
	}
	if got := leafViolations(planted); len(got) != 5 {
		t.Fatalf("leafViolations found %d of the 5 planted violations (the jwt import in limit breaks two rules): %v", len(got), got)
	}
}

// otelHomes are the packages that may import OpenTelemetry: the front and
// the MCP server (gateway), the Temporal connection (temporal), and the
// wiring that configures it from OTEL_* (cmd/porthole). No mechanism, and
// not policy, redact or audit, needs a tracer.
var otelHomes = []string{module + "/gateway", module + "/temporal", module + "/cmd/porthole"}

// otelViolations reads "pkg>import" pairs and reports OpenTelemetry imports
// outside otelHomes.
func otelViolations(fields []string) []string {
	var out []string
	for _, f := range fields {
		pkg, imp, ok := strings.Cut(f, ">")
		if ok && strings.HasPrefix(imp, "go.opentelemetry.io/") && !slices.Contains(otelHomes, pkg) {
			out = append(out, pkg+" imports "+imp+": OpenTelemetry belongs in gateway, temporal and cmd/porthole only")
		}
	}
	return out
}

func TestOnlyTheGatewayAndTemporalTrace(t *testing.T) {
	t.Parallel()
	for _, v := range otelViolations(goList(t, "-f", `{{.ImportPath}}{{range .Imports}} {{$.ImportPath}}>{{.}}{{end}}`, module+"/...")) {
		t.Error(v)
	}
	planted := []string{
		module + "/gateway/limit>go.opentelemetry.io/otel/trace",
		module + "/audit>go.opentelemetry.io/otel",
		module + "/gateway>go.opentelemetry.io/otel/trace",
		module + "/temporal>go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc",
	}
	if got := otelViolations(planted); len(got) != 2 {
		t.Fatalf("otelViolations found %d of the 2 planted violations: %v", len(got), got)
	}
}

// Every package's doc says, in its first sentence, what the package is
// for: "Package name ..." or, for a command, "Command name ...".
func TestEveryPackageSaysWhatItIsFor(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Name}}\t{{.Doc}}", module+"/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\t", 3)
		path, name, doc := f[0], f[1], f[2]
		want := "Package " + name + " "
		if name == "main" {
			want = "Command " + path[strings.LastIndex(path, "/")+1:] + " "
		}
		if !strings.HasPrefix(doc, want) {
			t.Errorf("%s: its doc does not begin %q: %q", path, want, doc)
		}
	}
}

// TestTheReleaseToolsArePinned: cmd/porthole-release is a module of its
// own requiring go-containerregistry v0.22.1, which porthole's module
// does not hold; the Makefile builds cosign v2.6.5 exactly (v3 reaches for
// the network by default).
func TestTheReleaseToolsArePinned(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "-C", "../porthole-release", "mod", "edit", "-json").Output()
	if err != nil {
		t.Fatalf("go mod edit -json in cmd/porthole-release: %v", err)
	}
	var gomod struct {
		Module  struct{ Path string }
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &gomod); err != nil {
		t.Fatal(err)
	}
	if want := module + "/cmd/porthole-release"; gomod.Module.Path != want {
		t.Errorf("cmd/porthole-release/go.mod is the module %q, not %q", gomod.Module.Path, want)
	}
	if !slices.ContainsFunc(gomod.Require, func(r struct{ Path, Version string }) bool {
		return r.Path == "github.com/google/go-containerregistry" && r.Version == "v0.22.1"
	}) {
		t.Errorf("cmd/porthole-release/go.mod does not require go-containerregistry v0.22.1: %+v", gomod.Require)
	}
	for _, m := range goList(t, "-m", "all") {
		if strings.HasPrefix(m, "github.com/google/go-containerregistry") || strings.HasPrefix(m, "github.com/sigstore/") {
			t.Errorf("porthole's module graph holds %s: the release tools stay out of it", m)
		}
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^COSIGN_VERSION := v2\.6\.5$`).Match(makefile) {
		t.Error("the Makefile does not pin cosign v2.6.5")
	}
}
