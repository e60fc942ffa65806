package main

import (
	"os/exec"
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
// DESIGN.md: go.temporal.io is imported only under temporal/, and never by
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
		module + "/internal/testkit":      "skips and fails tests",
		// A copy of another revision of the query parser, for tests only:
		// the binary screens with one parser, and that one is v0.1.0.
		module + "/policy/internal/serversql": "is the Temporal server's tokenizer, copied for tests",
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
