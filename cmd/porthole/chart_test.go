package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// The Helm chart is rendered with the helm binary `make helm` installs
// (PORTHOLE_HELM), and its objects are checked for what an operator relies
// on: no Secret created, secrets mounted as files, a locked-down security
// context, probes on the admin port, separate Service ports, and a
// NetworkPolicy whose MCP peers come from the values.

const chartDir = "../../deploy/helm/porthole"

// helmVersion is the helm `make helm` installs (the Makefile's
// HELM_VERSION; TestToolVersionsAgreeWithTheMakefile keeps them one).
const helmVersion = "v3.22.0"

// helmBin finds helm or fails with the command that installs it. Under
// -short it skips t.
func helmBin(t *testing.T) string {
	t.Helper()
	temporaltest.Needs(t, "helm")
	bin := os.Getenv("PORTHOLE_HELM")
	if bin == "" { // where `make helm` puts it
		bin = filepath.Join(filepath.Dir(filepath.Dir(temporaltest.DefaultCLIPath())), "helm-"+helmVersion, "helm")
	}
	if _, err := os.Stat(bin); bin == "" || err != nil {
		t.Fatalf("helm is not installed (PORTHOLE_HELM=%q): run `make helm`, or `make test`, which does", bin)
	}
	return bin
}

func helmTemplate(t *testing.T, set ...string) ([]map[string]any, string, error) {
	t.Helper()
	args := []string{"template", "demo", chartDir, "--set", "temporal.address=temporal:7233", "--set", "temporal.namespace=orders"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helmBin(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, errOut.String(), err
	}
	var docs []map[string]any
	dec := yaml.NewDecoder(&out)
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template printed invalid YAML: %v", err)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
	return docs, errOut.String(), nil
}

// dig walks a decoded YAML document by keys and list indexes.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func byKind(docs []map[string]any, kind string) map[string]any {
	for _, d := range docs {
		if d["kind"] == kind {
			return d
		}
	}
	return nil
}

func TestChartRefusesToRenderWithoutTokens(t *testing.T) {
	t.Parallel()
	_, stderr, err := helmTemplate(t)
	if err == nil || !strings.Contains(stderr, "tokensSecret.name") {
		t.Fatalf("rendered without a tokens Secret: %v %s", err, stderr)
	}
	if _, stderr, err := helmTemplate(t, "dangerouslyServeWithoutAuthentication=true"); err != nil {
		t.Fatalf("did not render with authentication deliberately off: %s", stderr)
	}
}

func TestChartRendersALockedDownDeployment(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, "tokensSecret.name=porthole-tokens", "temporal.apiKeySecret.name=temporal-key",
		"auditKeySecret.name=audit-key", "networkPolicy.mcpPeers[0].namespaceSelector.matchLabels.team=ingress")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	for _, d := range docs {
		if d["kind"] == "Secret" {
			t.Error("the chart creates a Secret; it must only mount existing ones")
		}
	}
	dep := byKind(docs, "Deployment")
	if dep == nil {
		t.Fatal("no Deployment")
	}
	pod := dig(dep, "spec", "template", "spec")
	c := dig(pod, "containers", 0)
	checks := map[string]any{
		"pod runAsNonRoot":               dig(pod, "securityContext", "runAsNonRoot"),
		"pod seccomp RuntimeDefault":     dig(pod, "securityContext", "seccompProfile", "type"),
		"readOnlyRootFilesystem":         dig(c, "securityContext", "readOnlyRootFilesystem"),
		"allowPrivilegeEscalation false": dig(c, "securityContext", "allowPrivilegeEscalation"),
		"capabilities drop ALL":          dig(c, "securityContext", "capabilities", "drop", 0),
		"liveness on the admin port":     dig(c, "livenessProbe", "httpGet", "port"),
		"readiness on the admin port":    dig(c, "readinessProbe", "httpGet", "path"),
		"no service-account token":       dig(pod, "automountServiceAccountToken"),
	}
	want := map[string]any{
		"pod runAsNonRoot": true, "pod seccomp RuntimeDefault": "RuntimeDefault", "readOnlyRootFilesystem": true,
		"allowPrivilegeEscalation false": false, "capabilities drop ALL": "ALL", "liveness on the admin port": "admin",
		"readiness on the admin port": "/readyz", "no service-account token": false,
	}
	for name, got := range checks {
		if got != want[name] {
			t.Errorf("%s: got %v, want %v", name, got, want[name])
		}
	}
	env := map[string]string{}
	for _, e := range dig(c, "env").([]any) {
		env[dig(e, "name").(string)], _ = dig(e, "value").(string)
	}
	for k, v := range map[string]string{
		"PORTHOLE_TOKENS_FILE": "/etc/porthole/tokens/tokens", "TEMPORAL_API_KEY_FILE": "/etc/porthole/temporal/api-key",
		"PORTHOLE_AUDIT_KEY_FILE": "/etc/porthole/audit-key/key", "TEMPORAL_NAMESPACE": "orders",
	} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	for k := range env {
		if strings.Contains(k, "API_KEY") && k != "TEMPORAL_API_KEY_FILE" {
			t.Errorf("a secret is passed in the environment as %s; it must be a file", k)
		}
	}
	secretVolumes := 0
	for _, v := range dig(pod, "volumes").([]any) {
		if dig(v, "secret", "secretName") != nil {
			secretVolumes++
		}
	}
	if secretVolumes != 3 {
		t.Errorf("%d Secret volumes, want tokens, API key and audit key", secretVolumes)
	}

	svc := byKind(docs, "Service")
	if dig(svc, "spec", "ports", 0, "name") != "mcp" || dig(svc, "spec", "ports", 1, "name") != "admin" {
		t.Errorf("Service ports %v, want mcp and admin", dig(svc, "spec", "ports"))
	}
	np := byKind(docs, "NetworkPolicy")
	if dig(np, "spec", "ingress", 0, "ports", 0, "port") != "mcp" ||
		dig(np, "spec", "ingress", 0, "from", 0, "namespaceSelector", "matchLabels", "team") != "ingress" {
		t.Errorf("NetworkPolicy MCP peers %v, want the ones from the values", dig(np, "spec", "ingress", 0))
	}
}

// The roster of upstream MCP servers is mounted read-only from a
// ConfigMap, and their tokens from a Secret, never from the environment.
func TestChartMountsTheRosterReadOnly(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, "tokensSecret.name=porthole-tokens", "rosterConfigMap.name=porthole-roster", "upstreamTokensSecret=upstream-tokens")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	pod := dig(byKind(docs, "Deployment"), "spec", "template", "spec")
	c := dig(pod, "containers", 0)
	env := map[string]string{}
	for _, e := range dig(c, "env").([]any) {
		env[dig(e, "name").(string)], _ = dig(e, "value").(string)
	}
	if env["PORTHOLE_ROSTER_FILE"] != "/etc/porthole/roster/roster.yaml" {
		t.Errorf("PORTHOLE_ROSTER_FILE = %q", env["PORTHOLE_ROSTER_FILE"])
	}
	mounts := map[string]bool{}
	for _, m := range dig(c, "volumeMounts").([]any) {
		mounts[dig(m, "mountPath").(string)] = dig(m, "readOnly") == true
	}
	for _, path := range []string{"/etc/porthole/roster", "/etc/porthole/upstream-tokens"} {
		if !mounts[path] {
			t.Errorf("%s is not mounted read-only: %v", path, mounts)
		}
	}
	found := map[string]bool{}
	for _, v := range dig(pod, "volumes").([]any) {
		if dig(v, "configMap", "name") == "porthole-roster" {
			found["roster"] = true
		}
		if dig(v, "secret", "secretName") == "upstream-tokens" {
			found["tokens"] = true
		}
	}
	if !found["roster"] || !found["tokens"] {
		t.Errorf("volumes %v: want the roster ConfigMap and the tokens Secret", dig(pod, "volumes"))
	}
}

func TestChartLints(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(helmBin(t), "lint", chartDir, "--set", "tokensSecret.name=t", "--set", "temporal.address=a:1", "--set", "temporal.namespace=n")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
}

// TestChartNetworkPolicyAdmitsNobodyWithoutPeers: with no peers named, the
// NetworkPolicy has no ingress rule at all. It used to admit any pod
// labelled porthole.dev/no-peer=true, which a pod in the namespace could
// carry.
func TestChartNetworkPolicyAdmitsNobodyWithoutPeers(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, "tokensSecret.name=porthole-tokens")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	np := byKind(docs, "NetworkPolicy")
	if rules, ok := dig(np, "spec", "ingress").([]any); !ok || len(rules) != 0 {
		t.Errorf("NetworkPolicy ingress without peers: %v, want no rule", dig(np, "spec", "ingress"))
	}
}

// TestToolVersionsAgreeWithTheMakefile: the Makefile installs the Temporal
// CLI and helm, and plain `go test` looks for them where it puts them; a
// version bumped in one place only would send the tests to a binary that
// is not there.
func TestToolVersionsAgreeWithTheMakefile(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for variable, want := range map[string]string{"TEMPORAL_CLI_VERSION": temporaltest.CLIVersion, "HELM_VERSION": helmVersion} {
		m := regexp.MustCompile(`(?m)^` + variable + ` := (\S+)$`).FindSubmatch(b)
		if m == nil || string(m[1]) != want {
			t.Errorf("the Makefile's %s is %q; the tests look for %s", variable, m, want)
		}
	}
}
