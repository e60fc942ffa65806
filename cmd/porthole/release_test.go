package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/gateway"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// TestVersionSaysWhatTheBinaryIs: `porthole version` names the stamped
// version, commit and commit time, the Go version, and the Temporal SDK
// and MCP go-sdk versions from the binary's build info; --json says the
// same for machines.
func TestVersionSaysWhatTheBinaryIs(t *testing.T) {
	version, commit, commitTime, modified = "1.2.3", "0123456789abcdef0123456789abcdef01234567", "2026-12-01T10:00:00Z", ""
	t.Cleanup(func() { version, commit, commitTime, modified = "", "", "", "" })
	var out, errs bytes.Buffer
	if code := runVersion(nil, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	text := out.String()
	for _, want := range []string{"porthole 1.2.3\n", "commit 0123456789abcdef0123456789abcdef01234567, committed 2026-12-01T10:00:00Z\n", "go1.", "go.temporal.io/sdk v1.", "github.com/modelcontextprotocol/go-sdk v1."} {
		if !strings.Contains(text, want) {
			t.Errorf("porthole version says\n%s\nwithout %q", text, want)
		}
	}
	out.Reset()
	if code := runVersion([]string{"--json"}, &out, &errs); code != 0 {
		t.Fatal(errs.String())
	}
	var b gateway.BuildInfo
	if err := json.Unmarshal(out.Bytes(), &b); err != nil || b.Version != "1.2.3" || b.Commit != commit || b.CommitTime != commitTime ||
		!strings.HasPrefix(b.TemporalSDK, "v1.") || !strings.HasPrefix(b.MCPSDK, "v1.") || !strings.HasPrefix(b.GoVersion, "go1.") {
		t.Fatalf("porthole version --json: %s (%v)", out.String(), err)
	}
	if code := runVersion([]string{"--yaml"}, &out, &errs); code != 2 {
		t.Errorf("an unknown argument: exit %d, want 2", code)
	}
}

// TestAReleaseIsStampedSummedSignedAndDescribed runs the release script as
// `make release` does, for linux/amd64 only (the bench of a cross-compile
// is the reproducibility check's business), with a throwaway signing key:
// the binary says the release's version and commit, SHA256SUMS covers it
// and the SBOM, its signature verifies with ssh-keygen against the
// throwaway key's allowed signers (and not against the repository's), and
// the SBOM is CycloneDX naming the Temporal SDK and the go-sdk.
func TestAReleaseIsStampedSummedSignedAndDescribed(t *testing.T) {
	temporaltest.Needs(t, "cyclonedx-gomod")
	cdx := os.Getenv("PORTHOLE_CYCLONEDX")
	if _, err := os.Stat(cdx); cdx == "" || err != nil {
		t.Fatalf("cyclonedx-gomod is not installed (PORTHOLE_CYCLONEDX=%q): run `make cyclonedx`, or `make test`, which does", cdx)
	}
	t.Parallel()
	dir := t.TempDir()
	key := filepath.Join(dir, "throwaway")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	signers := filepath.Join(dir, "allowed_signers")
	fields := strings.Fields(string(pub))
	if err := os.WriteFile(signers, []byte(`release@porthole-dev namespaces="porthole-release" `+fields[0]+" "+fields[1]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dist := filepath.Join(dir, "dist")
	cmd := exec.Command("sh", "deploy/release/release.sh")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "VERSION=0.0.1", "MAKE=make", "CYCLONEDX="+cdx, "RELEASE_SIGNING_KEY="+key,
		"RELEASE_TARGETS=linux/amd64", "DIST="+dist, "ALLOWED_SIGNERS="+signers)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	bin := filepath.Join(dist, "porthole-0.0.1-linux-amd64")
	out, err := exec.Command(bin, "version", "--json").Output()
	head, _ := exec.Command("git", "rev-parse", "HEAD").Output()
	when, _ := exec.Command("git", "log", "-1", "--format=%cI").Output()
	var b struct{ Version, Commit, CommitTime string }
	if err != nil || json.Unmarshal(out, &b) != nil || b.Version != "0.0.1" || b.Commit != strings.TrimSpace(string(head)) || b.CommitTime != strings.TrimSpace(string(when)) {
		t.Fatalf("the release binary says %s (%v), want version 0.0.1 at %s of %s", out, err, head, when)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil || !regexp.MustCompile(`(?m)^[0-9a-f]{64}  porthole-0\.0\.1-linux-amd64$`).Match(sums) ||
		!regexp.MustCompile(`(?m)^[0-9a-f]{64}  porthole-0\.0\.1\.cdx\.json$`).Match(sums) {
		t.Fatalf("SHA256SUMS:\n%s (%v)", sums, err)
	}
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = dist
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c: %v\n%s", err, out)
	}
	verify := func(allowed string) error {
		v := exec.Command("ssh-keygen", "-Y", "verify", "-f", allowed, "-I", "release@porthole-dev", "-n", "porthole-release", "-s", filepath.Join(dist, "SHA256SUMS.sig"))
		v.Stdin = bytes.NewReader(sums)
		return v.Run()
	}
	if err := verify(signers); err != nil {
		t.Fatalf("the signature does not verify with the signing key: %v", err)
	}
	wrong := exec.Command("ssh-keygen", "-Y", "verify", "-f", "../../deploy/release/allowed_signers", "-I", "release@porthole-dev", "-n", "porthole-release", "-s", filepath.Join(dist, "SHA256SUMS.sig"))
	wrong.Stdin = bytes.NewReader(sums)
	if out, err := wrong.CombinedOutput(); err == nil || !strings.Contains(string(out), "Could not verify signature") {
		t.Fatalf("a throwaway key's signature against the repository's release key: %v %s", err, out)
	}
	var sbom struct {
		BOMFormat  string `json:"bomFormat"`
		Components []struct {
			Name, Version string
		} `json:"components"`
	}
	raw, err := os.ReadFile(filepath.Join(dist, "porthole-0.0.1.cdx.json"))
	if err != nil || json.Unmarshal(raw, &sbom) != nil || sbom.BOMFormat != "CycloneDX" {
		t.Fatalf("the SBOM: %v %.300s", err, raw)
	}
	found := map[string]bool{}
	for _, c := range sbom.Components {
		found[c.Name] = true
	}
	for _, want := range []string{temporalSDKModule, mcpSDKModule} {
		if !found[want] {
			t.Errorf("the SBOM does not name %s", want)
		}
	}
}

// TestThePublishedReleaseKeyIsOneKey: the allowed signers file names the
// release key for the release identity and namespace, the same key as
// porthole-release.pub, whose fingerprint SECURITY.md prints.
func TestThePublishedReleaseKeyIsOneKey(t *testing.T) {
	t.Parallel()
	pub, err := os.ReadFile("../../deploy/release/porthole-release.pub")
	if err != nil {
		t.Fatal(err)
	}
	signers, err := os.ReadFile("../../deploy/release/allowed_signers")
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Join(strings.Fields(string(pub))[:2], " ")
	if want := `release@porthole-dev namespaces="porthole-release" ` + key + "\n"; string(signers) != want {
		t.Fatalf("allowed_signers is %q, want %q", signers, want)
	}
	out, err := exec.Command("ssh-keygen", "-l", "-f", "../../deploy/release/porthole-release.pub").Output()
	if err != nil {
		t.Fatal(err)
	}
	fp := strings.Fields(string(out))[1]
	security, err := os.ReadFile("../../SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(security), "`"+fp+"`") {
		t.Fatalf("SECURITY.md does not print the release key's fingerprint %s", fp)
	}
}

// TestTheChartFollowsTheRelease: the chart's appVersion is the newest
// release the CHANGELOG names.
func TestTheChartFollowsTheRelease(t *testing.T) {
	t.Parallel()
	changelog, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	chart, err := os.ReadFile("../../deploy/helm/porthole/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	release := regexp.MustCompile(`(?m)^## (\d+\.\d+\.\d+)`).FindSubmatch(changelog)
	app := regexp.MustCompile(`(?m)^appVersion: "?([^"\s]+)"?$`).FindSubmatch(chart)
	if release == nil || app == nil || string(release[1]) != string(app[1]) {
		t.Fatalf("the CHANGELOG's newest release is %q, the chart's appVersion %q", release, app)
	}
}
