package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/porthole-dev/porthole/audit/merkle"
	"github.com/porthole-dev/porthole/audit/witness"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// The Helm chart is rendered with the helm binary `make helm` installs
// (PORTHOLE_HELM), and its objects are checked for what an operator relies
// on: no Secret created, secrets mounted as files, a locked-down security
// context, probes on the admin port, separate Service ports, a
// NetworkPolicy whose MCP peers come from the values, and an audit trail
// per replica on volumes of its own (chart_trail_test.go runs it).

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
	return helmTemplateOf(t, chartDir, set...)
}

// helmTemplateOf renders the chart in dir as release demo.
func helmTemplateOf(t *testing.T, dir string, set ...string) ([]map[string]any, string, error) {
	t.Helper()
	args := []string{"template", "demo", dir, "--set", "temporal.address=temporal:7233", "--set", "temporal.namespace=orders", "--set", "image.digest=" + testDigest}
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

// withAuditKeys adds the two audit Secrets the chart requires, and the
// Secret of the tokens file, to a test's values.
func withAuditKeys(set ...string) []string {
	return append([]string{"tokensSecret.name=porthole-tokens", "adminTokensSecret.name=porthole-admin-tokens",
		"auditKeySecret.name=porthole-audit-key", "auditSigningKeySecret.name=porthole-audit-signing-key"}, set...)
}

// podOf is the pod template of the chart's StatefulSet, failing t when
// there is none.
func podOf(t *testing.T, docs []map[string]any) any {
	t.Helper()
	sts := byKind(docs, "StatefulSet")
	if sts == nil {
		t.Fatalf("no StatefulSet among %d objects", len(docs))
	}
	return dig(sts, "spec", "template", "spec")
}

// envOf is a container's environment by name; valueFrom entries are "".
func envOf(c any) map[string]string {
	env := map[string]string{}
	for _, e := range asList(dig(c, "env")) {
		env[dig(e, "name").(string)], _ = dig(e, "value").(string)
	}
	return env
}

// mountsOf is a container's volume mounts: mount path to volume name, and
// the paths mounted read-only.
func mountsOf(c any) (volume map[string]string, readOnly map[string]bool) {
	volume, readOnly = map[string]string{}, map[string]bool{}
	for _, m := range asList(dig(c, "volumeMounts")) {
		path := dig(m, "mountPath").(string)
		volume[path] = dig(m, "name").(string)
		readOnly[path] = dig(m, "readOnly") == true
	}
	return volume, readOnly
}

// volumesOf is the pod's volumes by name.
func volumesOf(pod any) map[string]any {
	vs := map[string]any{}
	for _, v := range asList(dig(pod, "volumes")) {
		vs[dig(v, "name").(string)] = v
	}
	return vs
}

func asList(v any) []any { l, _ := v.([]any); return l }

func TestChartRefusesToRenderWithoutTokens(t *testing.T) {
	t.Parallel()
	_, stderr, err := helmTemplate(t, "auditKeySecret.name=k", "auditSigningKeySecret.name=s")
	if err == nil || !strings.Contains(stderr, "tokensSecret.name") {
		t.Fatalf("rendered without a tokens Secret: %v %s", err, stderr)
	}
	if _, stderr, err := helmTemplate(t, "dangerouslyServeWithoutAuthentication=true", "adminTokensSecret.name=a", "auditKeySecret.name=k", "auditSigningKeySecret.name=s"); err != nil {
		t.Fatalf("did not render with authentication deliberately off: %s", stderr)
	}
}

func TestChartRendersALockedDownStatefulSet(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, withAuditKeys("temporal.apiKeySecret.name=temporal-key",
		"networkPolicy.mcpPeers[0].namespaceSelector.matchLabels.team=ingress")...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	for _, d := range docs {
		if d["kind"] == "Secret" {
			t.Error("the chart creates a Secret; it must only mount existing ones")
		}
		if d["kind"] == "Deployment" {
			t.Error("the chart renders a Deployment: its replicas would share no volume of their own")
		}
	}
	pod := podOf(t, docs)
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
	env := envOf(c)
	for k, v := range map[string]string{
		"PORTHOLE_TOKENS_FILE": "/etc/porthole/tokens/tokens", "TEMPORAL_API_KEY_FILE": "/etc/porthole/temporal/api-key",
		"PORTHOLE_AUDIT_KEY_FILE": "/etc/porthole/audit-key/key", "PORTHOLE_AUDIT_SIGNING_KEY_FILE": "/etc/porthole/audit-signing-key/key",
		"TEMPORAL_NAMESPACE": "orders",
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
	if secretVolumes != 5 {
		t.Errorf("%d Secret volumes, want tokens, admin tokens, API key, audit key and signing key", secretVolumes)
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
	docs, stderr, err := helmTemplate(t, withAuditKeys("rosterConfigMap.name=porthole-roster", "upstreamTokensSecret=upstream-tokens")...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	pod := podOf(t, docs)
	c := dig(pod, "containers", 0)
	env := envOf(c)
	if env["PORTHOLE_ROSTER_FILE"] != "/etc/porthole/roster/roster.yaml" {
		t.Errorf("PORTHOLE_ROSTER_FILE = %q", env["PORTHOLE_ROSTER_FILE"])
	}
	_, mounts := mountsOf(c)
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

// TestChartLints lints the chart both ways its trail can be kept: on
// claims, and on emptyDirs shipped elsewhere by the sidecar; and with its
// witness.
func TestChartLints(t *testing.T) {
	t.Parallel()
	logKey, err := merkle.VerifierKey("porthole.example.com/audit/demo-porthole-0", make(ed25519.PublicKey, ed25519.PublicKeySize))
	if err != nil {
		t.Fatal(err)
	}
	for name, set := range map[string][]string{
		"claims":               withAuditKeys(),
		"claims and an origin": withAuditKeys("audit.origin=porthole.example.com/audit"),
		"the chart's witness":  withAuditKeys("witness.enabled=true", "witness.keySecret.name=porthole-witness-key", "witness.logKeys[0]="+logKey),
		"emptyDirs and a shipper": withAuditKeys("audit.storage=emptyDir", "audit.shippedElsewhere=true",
			"audit.shipper.enabled=true", "audit.shipper.image=shipper@"+testDigest, "audit.shipper.configMap=shipper-config"),
	} {
		args := []string{"lint", "--strict", chartDir, "--set", "temporal.address=a:1", "--set", "temporal.namespace=n"}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		cmd := exec.Command(helmBin(t), args...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("helm lint with %s: %v\n%s", name, err, out)
		}
	}
}

// TestChartNetworkPolicyAdmitsNobodyWithoutPeers: with no peers named, the
// NetworkPolicy has no ingress rule at all. It used to admit any pod
// labelled porthole.dev/no-peer=true, which a pod in the namespace could
// carry.
func TestChartNetworkPolicyAdmitsNobodyWithoutPeers(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, withAuditKeys()...)
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

// auditPaths are where the rendered container keeps its trail: the log
// file, the checkpoint file, and the mounts (volume names) they are under.
// The checkpoint file's volume is named audit-witness (the chart's
// porthole.checkpointsVolume says why).
type auditPaths struct {
	log, checkpoints             string
	logVolume, checkpointsVolume string
	logMount, checkpointsMount   string
	env                          map[string]string
	mounts                       map[string]string
	readOnly                     map[string]bool
	claims                       map[string]any // volumeClaimTemplates by name
	pod, statefulSet, porthole   any
}

func auditPathsOf(t *testing.T, docs []map[string]any) auditPaths {
	t.Helper()
	var a auditPaths
	a.pod = podOf(t, docs)
	a.statefulSet = byKind(docs, "StatefulSet")
	a.porthole = dig(a.pod, "containers", 0)
	a.env = envOf(a.porthole)
	a.mounts, a.readOnly = mountsOf(a.porthole)
	a.log, a.checkpoints = a.env["PORTHOLE_AUDIT_LOG"], a.env["PORTHOLE_AUDIT_CHECKPOINT_FILE"]
	a.logMount, a.checkpointsMount = mountOf(a.mounts, a.log), mountOf(a.mounts, a.checkpoints)
	a.logVolume, a.checkpointsVolume = a.mounts[a.logMount], a.mounts[a.checkpointsMount]
	a.claims = map[string]any{}
	for _, c := range asList(dig(a.statefulSet, "spec", "volumeClaimTemplates")) {
		a.claims[dig(c, "metadata", "name").(string)] = c
	}
	return a
}

// mountOf is the mount a file is on: the longest mount path above it, as
// the kernel resolves it; "" when none is.
func mountOf(mounts map[string]string, file string) string {
	best := ""
	for path := range mounts {
		if file != "" && strings.HasPrefix(file, path+"/") && len(path) > len(best) {
			best = path
		}
	}
	return best
}

// TestChartGivesEachReplicaATrailOnVolumesOfItsOwn: the pods are a
// StatefulSet whose claim templates give each replica a volume for its
// audit log and another for its checkpoint file; the log is a file there,
// not the operations log; the keys are files from Secrets, mounted
// read-only.
func TestChartGivesEachReplicaATrailOnVolumesOfItsOwn(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, withAuditKeys("audit.size=20Gi", "audit.storageClassName=audit-disks",
		"audit.checkpoints.size=2Gi", "audit.checkpoints.storageClassName=checkpoint-disks", "audit.maxBytes=52428800")...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	a := auditPathsOf(t, docs)
	if dig(a.statefulSet, "spec", "replicas") != 2 {
		t.Errorf("replicas %v, want the chart's default of 2", dig(a.statefulSet, "spec", "replicas"))
	}
	if got, want := dig(a.statefulSet, "spec", "serviceName"), dig(byKind(docs, "Service"), "metadata", "name"); got != want || got == nil {
		t.Errorf("serviceName %v, want the chart's Service %v", got, want)
	}
	for _, when := range []string{"whenDeleted", "whenScaled"} {
		if got := dig(a.statefulSet, "spec", "persistentVolumeClaimRetentionPolicy", when); got != "Retain" {
			t.Errorf("persistentVolumeClaimRetentionPolicy.%s = %v, want Retain", when, got)
		}
	}

	switch a.log {
	case "", "stderr", "stdout", "/dev/stderr", "/dev/stdout":
		t.Fatalf("PORTHOLE_AUDIT_LOG = %q: the audit records would mix with the operations log", a.log)
	}
	if a.logVolume != "audit-log" || a.checkpointsVolume != "audit-witness" {
		t.Fatalf("log %q on volume %q, checkpoint file %q on volume %q: want audit-log and audit-witness", a.log, a.logVolume, a.checkpoints, a.checkpointsVolume)
	}
	if strings.HasPrefix(a.logMount+"/", a.checkpointsMount+"/") || strings.HasPrefix(a.checkpointsMount+"/", a.logMount+"/") {
		t.Errorf("the log's mount %s and the checkpoint file's %s nest: they would be one volume", a.logMount, a.checkpointsMount)
	}
	for name, want := range map[string][2]string{"audit-log": {"20Gi", "audit-disks"}, "audit-witness": {"2Gi", "checkpoint-disks"}} {
		c, ok := a.claims[name]
		if !ok {
			t.Errorf("no volumeClaimTemplate %s among %v", name, a.claims)
			continue
		}
		if dig(c, "spec", "accessModes", 0) != "ReadWriteOnce" || dig(c, "spec", "resources", "requests", "storage") != want[0] ||
			dig(c, "spec", "storageClassName") != want[1] {
			t.Errorf("volumeClaimTemplate %s: %v, want ReadWriteOnce, %s of %s", name, dig(c, "spec"), want[0], want[1])
		}
		if _, inPod := volumesOf(a.pod)[name]; inPod {
			t.Errorf("%s is also a pod volume; it must come from its claim template", name)
		}
	}
	for k, want := range map[string]string{"PORTHOLE_AUDIT_MAX_BYTES": "52428800", "PORTHOLE_AUDIT_FSYNC": "interval"} {
		if a.env[k] != want {
			t.Errorf("%s = %q, want %q", k, a.env[k], want)
		}
	}
	if _, ok := a.env["PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME"]; ok {
		t.Error("PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME is set: the checkpoint file must be on a volume of its own")
	}

	volumes := volumesOf(a.pod)
	for file, secret := range map[string]string{
		a.env["PORTHOLE_AUDIT_KEY_FILE"]: "porthole-audit-key", a.env["PORTHOLE_AUDIT_SIGNING_KEY_FILE"]: "porthole-audit-signing-key",
	} {
		dir := filepath.Dir(file)
		if !a.readOnly[dir] || dig(volumes[a.mounts[dir]], "secret", "secretName") != secret {
			t.Errorf("%s: want it from Secret %s, mounted read-only (mounts %v)", file, secret, a.mounts)
		}
	}
}

// TestChartRefusesToRenderWithoutTheAuditKeysUnlessWaived: each missing
// key stops the render with a sentence that says what would be lost;
// audit.dangerouslyWithoutKeys renders without them, and then no checkpoint
// file is configured (porthole refuses one without a signing key) while the
// log is still a file.
func TestChartRefusesToRenderWithoutTheAuditKeysUnlessWaived(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, refusal string
		set           []string
	}{
		{"no audit key Secret", "nobody can verify the trail", []string{"tokensSecret.name=t", "adminTokensSecret.name=a", "auditSigningKeySecret.name=s"}},
		{"no signing key Secret", "nothing proves an audit trail complete", []string{"tokensSecret.name=t", "adminTokensSecret.name=a", "auditKeySecret.name=k"}},
		{"pruning without a signing key", "audit.maxAge needs auditSigningKeySecret.name", []string{"tokensSecret.name=t", "adminTokensSecret.name=a", "auditKeySecret.name=k", "audit.dangerouslyWithoutKeys=true", "audit.maxAge=8760h"}},
	} {
		_, stderr, err := helmTemplate(t, tc.set...)
		if err == nil || !strings.Contains(stderr, tc.refusal) || !strings.Contains(stderr, "audit.dangerouslyWithoutKeys") && !strings.Contains(stderr, "audit.maxAge") {
			t.Errorf("%s: rendered (%v) or said something else: %s", tc.name, err, stderr)
		}
	}

	docs, stderr, err := helmTemplate(t, "tokensSecret.name=t", "adminTokensSecret.name=a", "audit.dangerouslyWithoutKeys=true")
	if err != nil {
		t.Fatalf("did not render with the keys deliberately waived: %s", stderr)
	}
	a := auditPathsOf(t, docs)
	for _, k := range []string{"PORTHOLE_AUDIT_KEY_FILE", "PORTHOLE_AUDIT_SIGNING_KEY_FILE", "PORTHOLE_AUDIT_CHECKPOINT_FILE"} {
		if v, ok := a.env[k]; ok {
			t.Errorf("%s = %q with no Secret for it", k, v)
		}
	}
	if a.logVolume != "audit-log" || a.claims["audit-log"] == nil || a.claims["audit-witness"] != nil {
		t.Errorf("waived keys: log %q on %q, claims %v; want the log on its claim and no checkpoint file", a.log, a.logVolume, a.claims)
	}

	docs, stderr, err = helmTemplate(t, "tokensSecret.name=t", "adminTokensSecret.name=a", "auditKeySecret.name=k", "audit.dangerouslyWithoutKeys=true")
	if err != nil {
		t.Fatalf("did not render with the signing key deliberately waived: %s", stderr)
	}
	if a := auditPathsOf(t, docs); a.env["PORTHOLE_AUDIT_KEY_FILE"] == "" || a.checkpoints != "" {
		t.Errorf("signing key waived: key file %q, checkpoint file %q; want the key and none", a.env["PORTHOLE_AUDIT_KEY_FILE"], a.checkpoints)
	}
}

// TestChartKeepsATrailOnEmptyDirsOnlyWhenItIsShippedElsewhere: emptyDir
// storage is refused until a value says the trail is shipped elsewhere;
// then the log is on an emptyDir and the checkpoint file on a memory-backed
// one (a file system of its own, as porthole requires), and no claim is
// made.
func TestChartKeepsATrailOnEmptyDirsOnlyWhenItIsShippedElsewhere(t *testing.T) {
	t.Parallel()
	_, stderr, err := helmTemplate(t, withAuditKeys("audit.storage=emptyDir")...)
	if err == nil || !strings.Contains(stderr, "audit.shippedElsewhere: true") || !strings.Contains(stderr, "only as long as its pod") {
		t.Errorf("emptyDir without shippedElsewhere: rendered (%v) or said something else: %s", err, stderr)
	}
	_, stderr, err = helmTemplate(t, withAuditKeys("audit.storage=hostPath")...)
	if err == nil || !strings.Contains(stderr, "persistentVolumeClaim or emptyDir") {
		t.Errorf("an unknown audit.storage: rendered (%v) or said something else: %s", err, stderr)
	}

	docs, stderr, err := helmTemplate(t, withAuditKeys("audit.storage=emptyDir", "audit.shippedElsewhere=true", "audit.size=5Gi")...)
	if err != nil {
		t.Fatalf("did not render emptyDir storage shipped elsewhere: %s", stderr)
	}
	a := auditPathsOf(t, docs)
	if len(a.claims) != 0 || dig(a.statefulSet, "spec", "persistentVolumeClaimRetentionPolicy") != nil {
		t.Errorf("emptyDir storage still makes claims: %v", a.claims)
	}
	volumes := volumesOf(a.pod)
	if got := dig(volumes[a.logVolume], "emptyDir", "sizeLimit"); a.logVolume != "audit-log" || got != "5Gi" {
		t.Errorf("log %q on volume %q (sizeLimit %v), want an emptyDir audit-log of 5Gi", a.log, a.logVolume, got)
	}
	if got := dig(volumes[a.checkpointsVolume], "emptyDir", "medium"); a.checkpointsVolume != "audit-witness" || got != "Memory" {
		t.Errorf("checkpoint file %q on volume %q (medium %v), want a memory-backed emptyDir audit-witness", a.checkpoints, a.checkpointsVolume, got)
	}
	if _, ok := a.env["PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME"]; ok {
		t.Error("PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME is set with emptyDir storage")
	}
}

// podEnv is the environment Kubernetes gives container c of the pod named
// podName: the variables in order, a fieldRef to metadata.name being the
// pod's name, and in each value $(NAME) of a variable defined before it
// expanded, $$ read as $, and anything else kept as written.
func podEnv(c any, podName string) map[string]string {
	env := map[string]string{}
	for _, e := range asList(dig(c, "env")) {
		name, _ := dig(e, "name").(string)
		if dig(e, "valueFrom", "fieldRef", "fieldPath") == "metadata.name" {
			env[name] = podName
			continue
		}
		value, _ := dig(e, "value").(string)
		var b strings.Builder
		for i := 0; i < len(value); i++ {
			end := strings.IndexByte(value[i:], ')')
			switch {
			case strings.HasPrefix(value[i:], "$$"):
				b.WriteByte('$')
				i++
				continue
			case strings.HasPrefix(value[i:], "$(") && end > 0:
				if v, ok := env[value[i+2:i+end]]; ok {
					b.WriteString(v)
					i += end
					continue
				}
			}
			b.WriteByte(value[i])
		}
		env[name] = b.String()
	}
	return env
}

// TestChartGivesEachReplicaAnOriginOfItsOwn: audit.origin is off by
// default. Set, each pod's PORTHOLE_AUDIT_ORIGIN, as Kubernetes expands it,
// is audit.origin and the pod's own name (a $ in audit.origin kept as
// written), one per replica, which porthole takes. An origin porthole
// would refuse, one without the signing key, one on emptyDirs (a
// re-created pod would start again under it) and one with pruning are
// refused.
func TestChartGivesEachReplicaAnOriginOfItsOwn(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, withAuditKeys()...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	if v, ok := envOf(auditPathsOf(t, docs).porthole)["PORTHOLE_AUDIT_ORIGIN"]; ok {
		t.Errorf("PORTHOLE_AUDIT_ORIGIN = %q by default, want it unset (no tree)", v)
	}
	for _, origin := range []string{"porthole.example.com/audit", "porthole.example.com/$(POD_NAME)"} {
		docs, stderr, err := helmTemplate(t, withAuditKeys("audit.origin="+origin, "replicaCount=3")...)
		if err != nil {
			t.Fatalf("helm template: %v\n%s", err, stderr)
		}
		porthole := auditPathsOf(t, docs).porthole
		for n := range 3 {
			pod := "demo-porthole-" + strconv.Itoa(n)
			got := podEnv(porthole, pod)["PORTHOLE_AUDIT_ORIGIN"]
			if got != origin+"/"+pod {
				t.Errorf("audit.origin %s: pod %s has PORTHOLE_AUDIT_ORIGIN %q, want %q", origin, pod, got, origin+"/"+pod)
			}
			if err := merkle.CheckOrigin(got); err != nil {
				t.Errorf("porthole would refuse pod %s's origin %q: %v", pod, got, err)
			}
		}
	}

	for _, tc := range []struct {
		name, refusal string
		set           []string
	}{
		{"an origin with a space", "without whitespace or +", withAuditKeys("audit.origin=porthole.example.com/my audit")},
		{"an origin with a +", "without whitespace or +", withAuditKeys("audit.origin=porthole.example.com/audit+1")},
		{"an origin past 255 bytes with the pod's name", "past the 255 bytes", withAuditKeys("audit.origin=" + strings.Repeat("a", 240))},
		{"an origin without the signing key", "audit.origin needs auditSigningKeySecret.name", []string{"tokensSecret.name=t", "adminTokensSecret.name=a", "auditKeySecret.name=k", "audit.dangerouslyWithoutKeys=true", "audit.origin=porthole.example.com/audit"}},
		{"an origin on emptyDirs", "audit.origin needs audit.storage: persistentVolumeClaim", withAuditKeys("audit.origin=porthole.example.com/audit", "audit.storage=emptyDir", "audit.shippedElsewhere=true")},
		{"the origin through env", "env.PORTHOLE_AUDIT_ORIGIN is set", withAuditKeys("env.PORTHOLE_AUDIT_ORIGIN=porthole.example.com/audit")},
	} {
		if _, stderr, err := helmTemplate(t, tc.set...); err == nil || !strings.Contains(stderr, tc.refusal) {
			t.Errorf("%s: rendered (%v) or said something else: %s", tc.name, err, stderr)
		}
	}
}

// newWitnessVerifierKey is the cosignature/v1 verifier key of a new
// witness named name, as porthole witness keygen writes it.
func newWitnessVerifierKey(t *testing.T, name string) string {
	t.Helper()
	_, vkey, err := witness.GenerateKey(name)
	if err != nil {
		t.Fatal(err)
	}
	return vkey
}

// withWitnesses are the values that point porthole at witnesses: an
// origin, and each URL with its verifier key.
func withWitnesses(urlsAndKeys ...string) []string {
	set := []string{"audit.origin=porthole.example.com/audit"}
	for i := 0; i+1 < len(urlsAndKeys); i += 2 {
		set = append(set, fmt.Sprintf("audit.witnesses[%d].url=%s", i/2, urlsAndKeys[i]), fmt.Sprintf("audit.witnesses[%d].verifierKey=%s", i/2, urlsAndKeys[i+1]))
	}
	return set
}

// TestChartSendsTheCheckpointsToTheWitnessesItIsGiven: audit.witnesses,
// audit.witnessQuorum and audit.witnessMaxLag become porthole's settings,
// which porthole takes as they are rendered; without witnesses none is
// set.
func TestChartSendsTheCheckpointsToTheWitnessesItIsGiven(t *testing.T) {
	t.Parallel()
	keyA, keyB := newWitnessVerifierKey(t, "witness.example.org/porthole"), newWitnessVerifierKey(t, "witness.example.net/audit")
	set := withWitnesses("https://witness.example.org", keyA, "http://witness.example.net:7380/", keyB)
	docs, stderr, err := helmTemplate(t, withAuditKeys(append(set, "audit.witnessQuorum=2", "audit.witnessMaxLag=10m")...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	env := auditPathsOf(t, docs).env
	want := "https://witness.example.org " + keyA + ",http://witness.example.net:7380/ " + keyB
	if env["PORTHOLE_AUDIT_WITNESSES"] != want || env["PORTHOLE_AUDIT_WITNESS_QUORUM"] != "2" || env["PORTHOLE_AUDIT_WITNESS_MAX_LAG"] != "10m" {
		t.Errorf("PORTHOLE_AUDIT_WITNESSES %q, _QUORUM %q, _MAX_LAG %q; want %q, 2 and 10m", env["PORTHOLE_AUDIT_WITNESSES"],
			env["PORTHOLE_AUDIT_WITNESS_QUORUM"], env["PORTHOLE_AUDIT_WITNESS_MAX_LAG"], want)
	}
	settings := auditSettings{witnesses: env["PORTHOLE_AUDIT_WITNESSES"], witnessQuorum: 2, origin: "porthole.example.com/audit/demo-porthole-0"}
	if err := settings.checkWitnesses(); err != nil || len(settings.parsedWitnesses) != 2 {
		t.Errorf("porthole refuses the witnesses the chart renders (%d taken): %v", len(settings.parsedWitnesses), err)
	}

	docs, stderr, err = helmTemplate(t, withAuditKeys(withWitnesses("https://witness.example.org", keyA)...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	if env := auditPathsOf(t, docs).env; env["PORTHOLE_AUDIT_WITNESS_QUORUM"] != "1" || env["PORTHOLE_AUDIT_WITNESS_MAX_LAG"] != "" {
		t.Errorf("one witness and the defaults: quorum %q, lag %q; want 1 and unset", env["PORTHOLE_AUDIT_WITNESS_QUORUM"], env["PORTHOLE_AUDIT_WITNESS_MAX_LAG"])
	}
	docs, _, _ = helmTemplate(t, withAuditKeys("audit.origin=porthole.example.com/audit")...)
	for k, v := range auditPathsOf(t, docs).env {
		if strings.HasPrefix(k, "PORTHOLE_AUDIT_WITNESS") {
			t.Errorf("%s=%q without audit.witnesses", k, v)
		}
	}
}

// TestChartRefusesWitnessesPortholeWouldRefuse: witnesses without an
// origin, an entry that is no URL and verifier key (a log's key given for
// a witness's among them), one witness named twice, a quorum the list
// cannot meet, a lag that is no duration or has no witnesses, and the
// settings given through env are refused, each by its value's name.
func TestChartRefusesWitnessesPortholeWouldRefuse(t *testing.T) {
	t.Parallel()
	key := newWitnessVerifierKey(t, "witness.example.org/porthole")
	logKey, err := merkle.VerifierKey("porthole.example.com/audit/demo-porthole-0", make(ed25519.PublicKey, ed25519.PublicKeySize))
	if err != nil {
		t.Fatal(err)
	}
	one := withWitnesses("https://witness.example.org", key)
	for _, tc := range []struct {
		name, refusal string
		set           []string
	}{
		{"witnesses without an origin", "audit.witnesses needs audit.origin", one[1:]},
		{"an empty verifier key", `audit.witnesses[0].verifierKey is ""`, withWitnesses("https://witness.example.org", "")},
		{"a verifier key holding a space", "audit.witnesses[0].verifierKey is", withWitnesses("https://witness.example.org", strings.Replace(key, "+", " +", 1))},
		{"a verifier key followed by a newline", "audit.witnesses[0].verifierKey is", withWitnesses("https://witness.example.org", key+"\n")},
		{"a log's key for a witness's", "cosignature/v1", withWitnesses("https://witness.example.org", logKey)},
		{"a URL that is not HTTP", "audit.witnesses[0].url", withWitnesses("ftp://witness.example.org", key)},
		{"a URL holding a space", "audit.witnesses[0].url", withWitnesses("https://witness.example.org/a b", key)},
		{"an entry that is a string", "audit.witnesses[0] is", []string{"audit.origin=o", "audit.witnesses[0]=https://witness.example.org " + key}},
		{"one witness twice", "names the witness witness.example.org/porthole twice", withWitnesses("https://a.example.org", key, "https://b.example.org", key)},
		{"a quorum past the list", "audit.witnessQuorum is 2", append(one, "audit.witnessQuorum=2")},
		{"a quorum of none", "audit.witnessQuorum is 0", append(one, "audit.witnessQuorum=0")},
		{"a lag without a unit", `audit.witnessMaxLag is "600"`, append(one, "audit.witnessMaxLag=600")},
		{"a lag without witnesses", "audit.witnessMaxLag needs audit.witnesses", []string{"audit.origin=o", "audit.witnessMaxLag=10m"}},
		{"the witnesses through env", "env.PORTHOLE_AUDIT_WITNESSES is set", []string{"env.PORTHOLE_AUDIT_WITNESSES=https://witness.example.org"}},
		{"the quorum through env", "env.PORTHOLE_AUDIT_WITNESS_QUORUM is set", append(one, "env.PORTHOLE_AUDIT_WITNESS_QUORUM=1")},
		{"the lag through env", "env.PORTHOLE_AUDIT_WITNESS_MAX_LAG is set", append(one, "env.PORTHOLE_AUDIT_WITNESS_MAX_LAG=0")},
	} {
		if _, stderr, err := helmTemplate(t, withAuditKeys(tc.set...)...); err == nil || !strings.Contains(stderr, tc.refusal) {
			t.Errorf("%s: rendered (%v) or said something else: %s", tc.name, err, stderr)
		}
	}
	for _, lag := range []string{"0", "90s", "1.5h", "1h30m"} {
		if _, stderr, err := helmTemplate(t, withAuditKeys(append(one, "audit.witnessMaxLag="+lag)...)...); err != nil {
			t.Errorf("audit.witnessMaxLag=%s, a duration porthole takes, was refused: %s", lag, stderr)
		}
	}
}

// objectNamed is the rendered object of that kind and name, or nil.
func objectNamed(docs []map[string]any, kind, name string) map[string]any {
	for _, d := range docs {
		if d["kind"] == kind && dig(d, "metadata", "name") == name {
			return d
		}
	}
	return nil
}

// withChartWitness are the values that run the chart's witness for the
// release demo's two replicas under origin, with their log keys, which it
// returns too.
func withChartWitness(t *testing.T, origin string, set ...string) ([]string, []string) {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	values := []string{"audit.origin=" + origin, "witness.enabled=true", "witness.keySecret.name=porthole-witness-key"}
	var logKeys []string
	for n := range 2 {
		k, err := merkle.VerifierKey(origin+"/demo-porthole-"+strconv.Itoa(n), pub)
		if err != nil {
			t.Fatal(err)
		}
		logKeys = append(logKeys, k)
		values = append(values, fmt.Sprintf("witness.logKeys[%d]=%s", n, k))
	}
	return withAuditKeys(append(values, set...)...), logKeys
}

// TestChartRunsNoWitnessByDefault: without witness.enabled nothing of the
// witness is rendered.
func TestChartRunsNoWitnessByDefault(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, withAuditKeys("audit.origin=porthole.example.com/audit")...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	for _, d := range docs {
		if strings.Contains(dig(d, "metadata", "name").(string), "witness") || dig(d, "metadata", "labels", "app.kubernetes.io/name") != "porthole" {
			t.Errorf("rendered by default: %v %v", d["kind"], dig(d, "metadata", "name"))
		}
	}
}

// TestChartRunsItsWitnessOnItsOwnState: witness.enabled renders one
// replica of porthole's image serving as a witness, with a --log-key for
// each replica's log (which porthole's witness takes), its key from the
// Secret, read-only, its state on a claim of its own that outlives the
// release, a TCP readiness probe, and a ClusterIP Service on port 7380.
func TestChartRunsItsWitnessOnItsOwnState(t *testing.T) {
	t.Parallel()
	set, logKeys := withChartWitness(t, "porthole.example.com/audit", "witness.size=2Gi", "witness.storageClassName=witness-disks")
	docs, stderr, err := helmTemplate(t, set...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	sts := objectNamed(docs, "StatefulSet", "demo-porthole-witness")
	if sts == nil || dig(sts, "spec", "replicas") != 1 || dig(sts, "spec", "serviceName") != "demo-porthole-witness" {
		t.Fatalf("the witness's StatefulSet: %v", sts)
	}
	c := dig(sts, "spec", "template", "spec", "containers", 0)
	if got := containerImages(t, docs); got["witness"] != got["porthole"] {
		t.Errorf("the witness runs %q, porthole %q: want porthole's image", got["witness"], got["porthole"])
	}
	var args []string
	for _, a := range asList(dig(c, "args")) {
		args = append(args, a.(string))
	}
	want := []string{"witness", "serve", "--key-file", "/etc/porthole/witness-key/key", "--state-dir", "/var/lib/porthole/witness-state",
		"--listen", "0.0.0.0:7380", "--log-key", logKeys[0], "--log-key", logKeys[1]}
	if !slices.Equal(args, want) {
		t.Errorf("the witness's args:\n%q\nwant\n%q", args, want)
	}
	skey, _, err := witness.GenerateKey("witness.example.org/test")
	if err != nil {
		t.Fatal(err)
	}
	cosigner, err := witness.NewCosigner(skey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := witness.NewServer(cosigner, logKeys, t.TempDir()); err != nil {
		t.Errorf("porthole's witness refuses the log keys the chart passes: %v", err)
	}

	// An origin holding a $ reaches the witness as written, once
	// Kubernetes has expanded the args.
	set, logKeys = withChartWitness(t, "porthole.example.com/$(POD_NAME)$$")
	docs, stderr, err = helmTemplate(t, set...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	rendered := asList(dig(objectNamed(docs, "StatefulSet", "demo-porthole-witness"), "spec", "template", "spec", "containers", 0, "args"))
	if got := podEnv(map[string]any{"env": []any{map[string]any{"name": "ARG", "value": rendered[len(rendered)-1]}}}, "")["ARG"]; got != logKeys[1] {
		t.Errorf("the last --log-key reaches the witness as %q, want %q", got, logKeys[1])
	}

	mounts, readOnly := mountsOf(c)
	key := volumesOf(dig(sts, "spec", "template", "spec"))["witness-key"]
	if mounts["/etc/porthole/witness-key"] != "witness-key" || !readOnly["/etc/porthole/witness-key"] ||
		dig(key, "secret", "secretName") != "porthole-witness-key" || dig(key, "secret", "items", 0, "path") != "key" {
		t.Errorf("the witness's key: mounts %v, volume %v; want the Secret's key at /etc/porthole/witness-key/key, read-only", mounts, key)
	}
	claim := dig(sts, "spec", "volumeClaimTemplates", 0)
	if mounts["/var/lib/porthole/witness-state"] != "witness-state" || dig(claim, "metadata", "name") != "witness-state" ||
		dig(claim, "spec", "resources", "requests", "storage") != "2Gi" || dig(claim, "spec", "storageClassName") != "witness-disks" {
		t.Errorf("the witness's state: mounts %v, claim %v; want witness-state of 2Gi of witness-disks at its --state-dir", mounts, claim)
	}
	if dig(sts, "spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted") != "Retain" {
		t.Errorf("the witness's state is not kept: %v", dig(sts, "spec", "persistentVolumeClaimRetentionPolicy"))
	}
	if dig(c, "readinessProbe", "tcpSocket", "port") != "witness" || dig(c, "ports", 0, "containerPort") != 7380 {
		t.Errorf("the witness's probe %v on ports %v: want a TCP probe of port 7380", dig(c, "readinessProbe"), dig(c, "ports"))
	}
	svc := objectNamed(docs, "Service", "demo-porthole-witness")
	if dig(svc, "spec", "type") != "ClusterIP" || dig(svc, "spec", "ports", 0, "port") != 7380 || dig(svc, "spec", "ports", 0, "targetPort") != "witness" {
		t.Errorf("the witness's Service: %v", dig(svc, "spec"))
	}
}

// selects reports whether a selector's labels are all among a pod's.
func selects(selector, labels any) bool {
	m, _ := selector.(map[string]any)
	for k, v := range m {
		if dig(labels, k) != v {
			return false
		}
	}
	return len(m) > 0
}

// TestChartLocksTheWitnessDownApartFromPorthole: the witness's pod and
// container have porthole's security context and no service-account
// token; porthole's Service and NetworkPolicy select no witness pod, and
// the witness's own selects them alone; its NetworkPolicy admits this
// release's porthole pods and the peers witness.peers names; the notes
// say what a witness in the cluster proves.
func TestChartLocksTheWitnessDownApartFromPorthole(t *testing.T) {
	t.Parallel()
	set, _ := withChartWitness(t, "porthole.example.com/audit", "witness.peers[0].namespaceSelector.matchLabels.team=audit")
	docs, stderr, err := helmTemplate(t, set...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	pod := dig(objectNamed(docs, "StatefulSet", "demo-porthole-witness"), "spec", "template")
	portholePod := dig(objectNamed(docs, "StatefulSet", "demo-porthole"), "spec", "template")
	spec, c := dig(pod, "spec"), dig(pod, "spec", "containers", 0)
	if !reflect.DeepEqual(dig(spec, "securityContext"), dig(portholePod, "spec", "securityContext")) ||
		!reflect.DeepEqual(dig(c, "securityContext"), dig(portholePod, "spec", "containers", 0, "securityContext")) {
		t.Errorf("the witness's security contexts %v, %v: want porthole's", dig(spec, "securityContext"), dig(c, "securityContext"))
	}
	if dig(spec, "securityContext", "runAsNonRoot") != true || dig(spec, "securityContext", "seccompProfile", "type") != "RuntimeDefault" ||
		dig(c, "securityContext", "readOnlyRootFilesystem") != true || dig(c, "securityContext", "capabilities", "drop", 0) != "ALL" ||
		dig(spec, "automountServiceAccountToken") != false {
		t.Errorf("the witness's pod is not locked down: %v", spec)
	}
	witnessLabels, portholeLabels := dig(pod, "metadata", "labels"), dig(portholePod, "metadata", "labels")
	for name, selector := range map[string]any{
		"porthole's Service":       dig(objectNamed(docs, "Service", "demo-porthole"), "spec", "selector"),
		"porthole's NetworkPolicy": dig(objectNamed(docs, "NetworkPolicy", "demo-porthole"), "spec", "podSelector", "matchLabels"),
		"porthole's StatefulSet":   dig(objectNamed(docs, "StatefulSet", "demo-porthole"), "spec", "selector", "matchLabels"),
	} {
		if selects(selector, witnessLabels) {
			t.Errorf("%s selects the witness's pods (%v)", name, witnessLabels)
		}
	}
	if s := dig(objectNamed(docs, "Service", "demo-porthole-witness"), "spec", "selector"); !selects(s, witnessLabels) || selects(s, portholeLabels) {
		t.Errorf("the witness's Service selects %v: want the witness's pods alone", s)
	}
	np := objectNamed(docs, "NetworkPolicy", "demo-porthole-witness")
	rule := dig(np, "spec", "ingress", 0)
	if !selects(dig(np, "spec", "podSelector", "matchLabels"), witnessLabels) || dig(rule, "ports", 0, "port") != "witness" ||
		!selects(dig(rule, "from", 0, "podSelector", "matchLabels"), portholeLabels) ||
		dig(rule, "from", 1, "namespaceSelector", "matchLabels", "team") != "audit" || len(asList(dig(np, "spec", "ingress"))) != 1 {
		t.Errorf("the witness's NetworkPolicy: %v; want its port from porthole's pods and witness.peers", dig(np, "spec"))
	}
	notes, stderr, err := helmNotes(t, set...)
	if err != nil || !strings.Contains(notes, "it proves little") || !strings.Contains(notes, "http://demo-porthole-witness:7380") {
		t.Errorf("the notes do not say where the witness is and what it proves (%v): %s\n%s", err, notes, stderr)
	}
}

// TestChartRefusesAWitnessItCannotRun: witness.enabled without the
// Secret of its key or without log keys, a log key porthole audit
// note-key did not print (a witness's key among them), and, under an
// origin, log keys that miss a replica's are refused.
func TestChartRefusesAWitnessItCannotRun(t *testing.T) {
	t.Parallel()
	set, logKeys := withChartWitness(t, "porthole.example.com/audit")
	witnessKey := newWitnessVerifierKey(t, "witness.example.org/porthole")
	for _, tc := range []struct {
		name, refusal string
		set           []string
	}{
		{"no key Secret", "witness.enabled needs witness.keySecret.name", append(slices.Clone(set), "witness.keySecret.name=")},
		{"no log key", "witness.enabled needs witness.logKeys", withAuditKeys("witness.enabled=true", "witness.keySecret.name=k")},
		{"a witness's key for a log's", "witness.logKeys[1] is", append(slices.Clone(set), "witness.logKeys[1]="+witnessKey)},
		{"a log key holding a space", "witness.logKeys[0] is", append(slices.Clone(set), "witness.logKeys[0]= "+logKeys[0])},
		{"a replica without a log key", "no key for the origin porthole.example.com/audit/demo-porthole-2", append(slices.Clone(set), "replicaCount=3")},
	} {
		if _, stderr, err := helmTemplate(t, tc.set...); err == nil || !strings.Contains(stderr, tc.refusal) {
			t.Errorf("%s: rendered (%v) or said something else: %s", tc.name, err, stderr)
		}
	}
}

// helmNotes renders the chart's NOTES.txt, which helm template leaves out:
// in a copy of the chart, the notes become a named template that a
// manifest of kind Notes shows.
func helmNotes(t *testing.T, set ...string) (string, string, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "porthole")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	templates := filepath.Join(dir, "templates")
	notes, err := os.ReadFile(filepath.Join(templates, "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"NOTES.txt":  "",
		"_notes.tpl": `{{- define "test.notes" -}}` + string(notes) + `{{- end -}}`,
		"notes.yaml": "kind: Notes\ntext: {{ include \"test.notes\" . | toJson }}\n",
	} {
		if err := os.WriteFile(filepath.Join(templates, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, stderr, err := helmTemplateOf(t, dir, set...)
	if err != nil {
		return "", stderr, err
	}
	text, _ := dig(byKind(docs, "Notes"), "text").(string)
	return text, stderr, nil
}

// TestChartStillTakesAuditWitnessAndSaysItIsDeprecated: audit.checkpoints
// sizes the checkpoint file's volume; audit.witness, its former name, is
// still taken (before audit.checkpoints, key by key), for claims and for
// emptyDirs, and the notes helm prints then say it is deprecated. The
// volume keeps the name audit-witness, which existing claims have.
func TestChartStillTakesAuditWitnessAndSaysItIsDeprecated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		set             []string
		size, class     string
		deprecationSaid bool
	}{
		{"the defaults", nil, "1Gi", "", false},
		{"audit.checkpoints", []string{"audit.checkpoints.size=3Gi", "audit.checkpoints.storageClassName=fast"}, "3Gi", "fast", false},
		{"audit.witness", []string{"audit.witness.size=2Gi", "audit.witness.storageClassName=old"}, "2Gi", "old", true},
		{"audit.witness for one key, audit.checkpoints for another", []string{"audit.witness.size=2Gi", "audit.checkpoints.size=3Gi", "audit.checkpoints.storageClassName=fast"}, "2Gi", "fast", true},
	} {
		docs, stderr, err := helmTemplate(t, withAuditKeys(tc.set...)...)
		if err != nil {
			t.Fatalf("%s: helm template: %v\n%s", tc.name, err, stderr)
		}
		c := auditPathsOf(t, docs).claims["audit-witness"]
		size, _ := dig(c, "spec", "resources", "requests", "storage").(string)
		class, _ := dig(c, "spec", "storageClassName").(string)
		if size != tc.size || class != tc.class {
			t.Errorf("%s: the audit-witness claim asks for %v of %v, want %s of %q", tc.name, size, class, tc.size, tc.class)
		}
		notes, stderr, err := helmNotes(t, withAuditKeys(tc.set...)...)
		if err != nil || !strings.Contains(notes, "audit trail") {
			t.Fatalf("%s: the notes did not render (%v): %s\n%s", tc.name, err, notes, stderr)
		}
		if said := strings.Contains(notes, "audit.witness is deprecated: use audit.checkpoints"); said != tc.deprecationSaid {
			t.Errorf("%s: the notes say audit.witness is deprecated: %v, want %v:\n%s", tc.name, said, tc.deprecationSaid, notes)
		}
	}
	docs, stderr, err := helmTemplate(t, withAuditKeys("audit.storage=emptyDir", "audit.shippedElsewhere=true", "audit.witness.emptyDirSizeLimit=64Mi")...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	if got := dig(volumesOf(podOf(t, docs))["audit-witness"], "emptyDir", "sizeLimit"); got != "64Mi" {
		t.Errorf("audit.witness.emptyDirSizeLimit=64Mi: the checkpoint file's emptyDir has sizeLimit %v", got)
	}
}

// TestChartRefusesEnvThatWouldMoveTheTrail: a variable the chart sets for
// the trail cannot be set again through env, where it would win (the last
// of two names does) and could put the audit records back on stderr.
func TestChartRefusesEnvThatWouldMoveTheTrail(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"PORTHOLE_AUDIT_LOG", "PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME", "PORTHOLE_AUDIT_CHECKPOINT_FILE", "PORTHOLE_ADMIN_TOKENS_FILE", "PORTHOLE_ADMIN_PPROF"} {
		_, stderr, err := helmTemplate(t, withAuditKeys("env."+name+"=stderr")...)
		if err == nil || !strings.Contains(stderr, "env."+name+" is set") {
			t.Errorf("env.%s: rendered (%v) or said something else: %s", name, err, stderr)
		}
	}
	docs, stderr, err := helmTemplate(t, withAuditKeys("env.PORTHOLE_AUDIT_CHECKPOINT_EVERY=500")...)
	if err != nil {
		t.Fatalf("an audit setting the chart does not own was refused: %s", stderr)
	}
	if got := envOf(dig(podOf(t, docs), "containers", 0))["PORTHOLE_AUDIT_CHECKPOINT_EVERY"]; got != "500" {
		t.Errorf("PORTHOLE_AUDIT_CHECKPOINT_EVERY = %q, want 500", got)
	}
}

// TestChartRunsTheShipperBesideTheTrailReadOnly: the optional shipper is a
// native sidecar that reads the log's volume and cannot write it, never
// sees the checkpoint file, is locked down like porthole, and keeps its
// state on a claim of its own.
func TestChartRunsTheShipperBesideTheTrailReadOnly(t *testing.T) {
	t.Parallel()
	if _, stderr, err := helmTemplate(t, withAuditKeys("audit.shipper.enabled=true")...); err == nil || !strings.Contains(stderr, "audit.shipper.image") {
		t.Errorf("a shipper without an image: rendered (%v) or said something else: %s", err, stderr)
	}
	docs, stderr, err := helmTemplate(t, withAuditKeys("audit.shipper.enabled=true", "audit.shipper.image=shipper@"+testDigest,
		"audit.shipper.configMap=shipper-config")...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	a := auditPathsOf(t, docs)
	s := dig(a.pod, "initContainers", 0)
	if dig(s, "name") != "audit-shipper" || dig(s, "restartPolicy") != "Always" {
		t.Fatalf("init container %v: want the audit-shipper as a native sidecar", s)
	}
	mounts, readOnly := mountsOf(s)
	if mounts[a.logMount] != "audit-log" || !readOnly[a.logMount] {
		t.Errorf("the shipper's mounts %v: want audit-log at %s, read-only", mounts, a.logMount)
	}
	for path, volume := range mounts {
		if volume == "audit-witness" {
			t.Errorf("the shipper mounts the checkpoint file's volume at %s", path)
		}
	}
	if dig(s, "securityContext", "readOnlyRootFilesystem") != true || dig(s, "securityContext", "allowPrivilegeEscalation") != false ||
		dig(s, "securityContext", "capabilities", "drop", 0) != "ALL" {
		t.Errorf("the shipper's securityContext %v is not locked down", dig(s, "securityContext"))
	}
	if a.claims["audit-shipper"] == nil || dig(volumesOf(a.pod)["audit-shipper-config"], "configMap", "name") != "shipper-config" {
		t.Errorf("claims %v, volumes %v: want a claim for the shipper's state and its ConfigMap", a.claims, volumesOf(a.pod))
	}
	if _, ok := envOf(s)["POD_NAME"]; !ok {
		t.Errorf("the shipper's env %v: want POD_NAME to label what it ships", envOf(s))
	}
}

// TestChartTakesTheOAuthSettings: with an issuer the chart needs no tokens
// Secret, passes the settings, mounts the introspection secret read-only,
// and refuses an issuer without the public URL.
func TestChartTakesTheOAuthSettings(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, "auditKeySecret.name=k", "auditSigningKeySecret.name=s", "adminTokensSecret.name=a",
		"oauth.publicURL=https://porthole.example.com/mcp", "oauth.issuers=corp=https://login.example.com",
		"oauth.introspection.url=https://login.example.com/introspect", "oauth.introspection.clientID=porthole", "oauth.introspection.clientSecret.name=intro")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	for _, want := range []string{"PORTHOLE_PUBLIC_URL", "https://porthole.example.com/mcp", "PORTHOLE_OAUTH_ISSUER", "corp=https://login.example.com",
		"PORTHOLE_OAUTH_INTROSPECTION_CLIENT_SECRET_FILE", "/etc/porthole/oauth-introspection/client-secret", `"secretName":"intro"`,
		`"defaultMode":288`, `"fsGroupChangePolicy":"OnRootMismatch"`} {
		if rendered, _ := json.Marshal(docs); !strings.Contains(string(rendered), want) {
			t.Errorf("the rendered chart lacks %q", want)
		}
	}
	if _, stderr, err := helmTemplate(t, "auditKeySecret.name=k", "auditSigningKeySecret.name=s", "adminTokensSecret.name=a", "oauth.issuers=https://login.example.com"); err == nil || !strings.Contains(stderr, "oauth.publicURL") {
		t.Errorf("an issuer without the public URL rendered (%v): %s", err, stderr)
	}
}

// TestChartRefusesAnFsyncPolicyPortholeRefuses: a value porthole refuses
// at start made the pod crash-loop (found by review).
func TestChartRefusesAnFsyncPolicyPortholeRefuses(t *testing.T) {
	t.Parallel()
	if _, stderr, err := helmTemplate(t, withAuditKeys("audit.fsync=Always")...); err == nil || !strings.Contains(stderr, "audit.fsync") {
		t.Fatalf("audit.fsync=Always rendered (%v): %s", err, stderr)
	}
}

// TestChartTakesARedisURLOnlyFromASecret: the URL (it may hold a password)
// is mounted from a Secret and read from its file; env cannot set it, nor
// PORTHOLE_REPLICAS, which the chart takes from replicaCount; a failure
// mode porthole refuses is refused.
func TestChartTakesARedisURLOnlyFromASecret(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, withAuditKeys("redis.urlSecret.name=porthole-redis")...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	rendered, _ := json.Marshal(docs)
	for _, want := range []string{"PORTHOLE_REDIS_URL_FILE", "/etc/porthole/redis/url", `"secretName":"porthole-redis"`, `"name":"PORTHOLE_REPLICAS","value":"2"`, `"name":"PORTHOLE_REDIS_FAILURE","value":"closed"`} {
		if !strings.Contains(string(rendered), want) {
			t.Errorf("the rendered chart lacks %q", want)
		}
	}
	for _, set := range []string{"env.PORTHOLE_REDIS_URL=redis://:pw@h:6379", "env.PORTHOLE_REPLICAS=5", "redis.failure=open"} {
		if _, stderr, err := helmTemplate(t, withAuditKeys("redis.urlSecret.name=porthole-redis", set)...); err == nil {
			t.Errorf("%s rendered: %s", set, stderr)
		}
	}
}

// TestChartPassesTheOTelSettings: the otel values become the standard
// OTEL_* variables and porthole's own, and nothing is set without an
// endpoint.
func TestChartPassesTheOTelSettings(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, withAuditKeys("otel.endpoint=http://collector:4318", "otel.sampler=parentbased_traceidratio", "otel.samplerArg=0.25", "otel.trustTraceparent=true")...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	a := auditPathsOf(t, docs)
	for k, want := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG": "0.25", "OTEL_SERVICE_NAME": "porthole", "PORTHOLE_OTEL_TRUST_TRACEPARENT": "true", "PORTHOLE_OTEL_PRINCIPAL": "false"} {
		if a.env[k] != want {
			t.Errorf("%s=%q, want %q", k, a.env[k], want)
		}
	}
	docs, _, _ = helmTemplate(t, withAuditKeys()...)
	for k := range auditPathsOf(t, docs).env {
		if strings.HasPrefix(k, "OTEL_") {
			t.Errorf("%s is set without otel.endpoint", k)
		}
	}
}

// The secret page tokens are sealed under comes from a Secret, mounted
// read-only, so that every replica opens the others' tokens; without one
// nothing is mounted and porthole makes its own (and says so).
func TestChartMountsTheSecretKeyFromASecret(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, withAuditKeys("secretKeySecret.name=porthole-secret-key")...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	pod := podOf(t, docs)
	c := dig(pod, "containers", 0)
	if env := envOf(c); env["PORTHOLE_SECRET_KEY_FILE"] != "/etc/porthole/secret-key/key" {
		t.Errorf("PORTHOLE_SECRET_KEY_FILE = %q", env["PORTHOLE_SECRET_KEY_FILE"])
	}
	if _, readOnly := mountsOf(c); !readOnly["/etc/porthole/secret-key"] {
		t.Error("the secret key is not mounted read-only")
	}
	if v := volumesOf(pod)["secret-key"]; dig(v, "secret", "secretName") != "porthole-secret-key" {
		t.Errorf("the secret-key volume is %v", v)
	}
	docs, _, err = helmTemplate(t, withAuditKeys()...)
	if err != nil {
		t.Fatal(err)
	}
	if env := envOf(dig(podOf(t, docs), "containers", 0)); env["PORTHOLE_SECRET_KEY_FILE"] != "" {
		t.Error("PORTHOLE_SECRET_KEY_FILE is set without a Secret")
	}
}

// /metrics names principals, tools and upstreams: the chart asks for the
// Secret of its tokens, mounts it read-only and points porthole at it; it
// renders without one only when told to, and never makes one.
func TestChartAsksForTheMetricsTokenFromASecret(t *testing.T) {
	t.Parallel()
	_, stderr, err := helmTemplate(t, "tokensSecret.name=t", "auditKeySecret.name=k", "auditSigningKeySecret.name=s")
	if err == nil || !strings.Contains(stderr, "adminTokensSecret.name") {
		t.Fatalf("rendered without the admin tokens Secret: %v %s", err, stderr)
	}
	docs, stderr, err := helmTemplate(t, withAuditKeys()...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	pod := podOf(t, docs)
	c := dig(pod, "containers", 0)
	if env := envOf(c); env["PORTHOLE_ADMIN_TOKENS_FILE"] != "/etc/porthole/admin-tokens/tokens" {
		t.Errorf("PORTHOLE_ADMIN_TOKENS_FILE = %q", env["PORTHOLE_ADMIN_TOKENS_FILE"])
	}
	if _, readOnly := mountsOf(c); !readOnly["/etc/porthole/admin-tokens"] {
		t.Error("the admin tokens are not mounted read-only")
	}
	if v := volumesOf(pod)["admin-tokens"]; dig(v, "secret", "secretName") != "porthole-admin-tokens" {
		t.Errorf("the admin-tokens volume is %v", v)
	}
	if byKind(docs, "Secret") != nil {
		t.Error("the chart made a Secret")
	}
	if _, stderr, err := helmTemplate(t, "tokensSecret.name=t", "auditKeySecret.name=k", "auditSigningKeySecret.name=s", "metricsDangerouslyWithoutToken=true"); err != nil {
		t.Errorf("did not render with the token deliberately waived: %s", stderr)
	}
}

// TestChartPassesThePersonalDataDetectors: redaction.personal becomes
// PORTHOLE_REDACT_PERSONAL, which is unset without it.
func TestChartPassesThePersonalDataDetectors(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, withAuditKeys("redaction.personal=email\\,card")...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	if got := auditPathsOf(t, docs).env["PORTHOLE_REDACT_PERSONAL"]; got != "email,card" {
		t.Errorf("PORTHOLE_REDACT_PERSONAL=%q, want email,card", got)
	}
	docs, _, _ = helmTemplate(t, withAuditKeys()...)
	if got, ok := auditPathsOf(t, docs).env["PORTHOLE_REDACT_PERSONAL"]; ok {
		t.Errorf("PORTHOLE_REDACT_PERSONAL=%q without redaction.personal", got)
	}
}

// testDigest is an image digest for the chart's tests.
const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// containerImages are the images of the StatefulSet's containers (init
// containers first), by name.
func containerImages(t *testing.T, docs []map[string]any) map[string]string {
	t.Helper()
	images := map[string]string{}
	for _, d := range docs {
		if d["kind"] != "StatefulSet" {
			continue
		}
		spec := d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		for _, key := range []string{"initContainers", "containers"} {
			list, _ := spec[key].([]any)
			for _, c := range list {
				c := c.(map[string]any)
				images[c["name"].(string)] = c["image"].(string)
			}
		}
	}
	return images
}

// TestTheChartRunsImagesByDigest: porthole's image is
// repository@image.digest; without a digest the chart refuses to render,
// naming image.allowTag, which takes the tag deliberately; a digest of
// the wrong shape is refused; the audit shipper's image must name a digest
// too, unless its allowTag says otherwise.
func TestTheChartRunsImagesByDigest(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, withAuditKeys()...)
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if got := containerImages(t, docs)["porthole"]; got != "ghcr.io/porthole-dev/porthole@"+testDigest {
		t.Errorf("porthole's image: %q", got)
	}
	for name, set := range map[string][]string{
		"no digest":          {"image.digest="},
		"a digest too short": {"image.digest=sha256:0123"},
		"a tag as a digest":  {"image.digest=0.1.0"},
		"a shipper by tag": {"audit.shipper.enabled=true", "audit.shipper.image=fluent/fluent-bit:4.0",
			"audit.shipper.configMap=shipper-config"},
	} {
		if _, stderr, err := helmTemplate(t, withAuditKeys(set...)...); err == nil || !strings.Contains(stderr, "digest") {
			t.Errorf("%s: rendered, or refused without naming the digest: %v %s", name, err, stderr)
		}
	}
	docs, stderr, err = helmTemplate(t, withAuditKeys("image.digest=", "image.allowTag=true", "audit.shipper.enabled=true",
		"audit.shipper.image=fluent/fluent-bit:4.0", "audit.shipper.allowTag=true", "audit.shipper.configMap=shipper-config")...)
	if err != nil {
		t.Fatalf("tags allowed deliberately: %v %s", err, stderr)
	}
	images := containerImages(t, docs)
	if images["porthole"] != "ghcr.io/porthole-dev/porthole:"+chartAppVersion(t) || images["audit-shipper"] != "fluent/fluent-bit:4.0" {
		t.Errorf("tags allowed deliberately: %v", images)
	}
}

// chartAppVersion is the chart's appVersion.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^appVersion: "?([^"\s]+)"?$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Chart.yaml has no appVersion")
	}
	return string(m[1])
}
