package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
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

// pinnedGo is the Go every build runs: the Makefile's GO_TOOLCHAIN.
func pinnedGo(t *testing.T) string {
	t.Helper()
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^GO_TOOLCHAIN := (go1\.\d+\.\d+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no GO_TOOLCHAIN := go1.N.N")
	}
	return string(m[1])
}

// TestEveryBuildRunsThePinnedGo: go.mod's toolchain line, .ci/run, the
// scripts that build, the Dockerfile's build stage and the README name the
// Makefile's Go, and the binary `make build` writes says it was built
// with it (GOTOOLCHAIN=local, as these machines set, would otherwise keep
// whichever Go is installed).
func TestEveryBuildRunsThePinnedGo(t *testing.T) {
	t.Parallel()
	want := pinnedGo(t)
	for file, line := range map[string]string{
		"go.mod":                    "\ntoolchain " + want + "\n",
		".ci/run":                   "\nexport GOTOOLCHAIN=" + want + "\n",
		".ci/reproducible":          "\nexport GOTOOLCHAIN=" + want + "\n",
		".ci/fuzz-target":           "\nexport GOTOOLCHAIN=" + want + "\n",
		"deploy/release/release.sh": "\nexport GOTOOLCHAIN=" + want + "\n",
		"Dockerfile":                "\nFROM golang:" + strings.TrimPrefix(want, "go") + "-bookworm AS build\n",
		"README.md":                 want,
	} {
		b, err := os.ReadFile("../../" + file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), line) {
			t.Errorf("%s lacks %q", file, strings.TrimSpace(line))
		}
	}
	if d := dockerfile(t); !strings.Contains(d, "\nENV GOTOOLCHAIN="+want+"\n") {
		t.Errorf("the Dockerfile's build stage does not set GOTOOLCHAIN=%s", want)
	}
	bin := filepath.Join(t.TempDir(), "porthole")
	build := exec.Command("make", "--no-print-directory", "-C", "../..", "build", "BUILD_OUT="+bin)
	// What the caller's environment says is overridden by the Makefile.
	build.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	var b gateway.BuildInfo
	if err != nil || json.Unmarshal(out, &b) != nil {
		t.Fatalf("porthole version --json: %s (%v)", out, err)
	}
	if b.GoVersion != want {
		t.Fatalf("the binary make build writes was built with %s, want %s", b.GoVersion, want)
	}
}

// TestAReleaseIsStampedSummedSignedAndDescribed runs the release script as
// `make release` does, for two targets (linux/amd64 and darwin/arm64; the
// third is built the same way), with a throwaway signing key: each binary
// says the release's version and commit, SHA256SUMS covers the binaries
// and their SBOMs, its signature verifies with ssh-keygen against the
// throwaway key's allowed signers (and not against the repository's), and
// each binary's SBOM is CycloneDX describing that binary: the release's
// version, its target, its Go, its SHA-256, and the Temporal SDK and the
// go-sdk among its modules.
func TestAReleaseIsStampedSummedSignedAndDescribed(t *testing.T) {
	temporaltest.Needs(t, "cyclonedx-gomod")
	cdx := os.Getenv("PORTHOLE_CYCLONEDX")
	if _, err := os.Stat(cdx); cdx == "" || err != nil {
		t.Fatalf("cyclonedx-gomod is not installed (PORTHOLE_CYCLONEDX=%q): run `make cyclonedx`, or `make test`, which does", cdx)
	}
	t.Parallel()
	dir := t.TempDir()
	key, signers := throwawayReleaseKey(t, dir)
	dist := filepath.Join(dir, "dist")
	targets := []string{"linux/amd64", "darwin/arm64"}
	cmd := exec.Command("sh", "deploy/release/release.sh")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "VERSION=0.0.1", "MAKE=make", "CYCLONEDX="+cdx, "RELEASE_SIGNING_KEY="+key,
		"RELEASE_TARGETS="+strings.Join(targets, " "), "DIST="+dist, "ALLOWED_SIGNERS="+signers)
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
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range targets {
		name := "porthole-0.0.1-" + strings.ReplaceAll(target, "/", "-")
		for _, f := range []string{name, name + ".cdx.json"} {
			if !regexp.MustCompile(`(?m)^[0-9a-f]{64}  ` + regexp.QuoteMeta(f) + `$`).Match(sums) {
				t.Errorf("SHA256SUMS does not name %s:\n%s", f, sums)
			}
		}
		checkBinarySBOM(t, filepath.Join(dist, name), target)
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
}

// throwawayReleaseKey makes an SSH key pair in dir, and an allowed
// signers file naming it as the release key.
func throwawayReleaseKey(t *testing.T, dir string) (key, signers string) {
	t.Helper()
	key = filepath.Join(dir, "throwaway")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	signers = filepath.Join(dir, "allowed_signers")
	fields := strings.Fields(string(pub))
	if err := os.WriteFile(signers, []byte(`release@porthole-dev namespaces="porthole-release" `+fields[0]+" "+fields[1]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return key, signers
}

// checkBinarySBOM holds a release binary's SBOM (the binary's name with
// .cdx.json) to the binary it stands beside.
func checkBinarySBOM(t *testing.T, bin, target string) {
	t.Helper()
	var sbom struct {
		BOMFormat string `json:"bomFormat"`
		Metadata  struct {
			Component  struct{ Name, Version, Purl string }
			Properties []struct{ Name, Value string }
		}
		Components []struct{ Name, Version string }
	}
	raw, err := os.ReadFile(bin + ".cdx.json")
	if err != nil || json.Unmarshal(raw, &sbom) != nil || sbom.BOMFormat != "CycloneDX" {
		t.Fatalf("the SBOM of %s: %v %.300s", bin, err, raw)
	}
	if c := sbom.Metadata.Component; c.Name != module || c.Version != "v0.0.1" {
		t.Errorf("the SBOM of %s describes %s %s, want %s v0.0.1", bin, c.Name, c.Version, module)
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{}
	for _, p := range sbom.Metadata.Properties {
		props[p.Name] = p.Value
	}
	goos, goarch, _ := strings.Cut(target, "/")
	for name, want := range map[string]string{
		"cdx:gomod:build:env:GOOS":      goos,
		"cdx:gomod:build:env:GOARCH":    goarch,
		"cdx:gomod:build:env:GOVERSION": pinnedGo(t),
		"cdx:gomod:binary:hash:SHA-256": fmt.Sprintf("%x", sha256.Sum256(binary)),
	} {
		if props[name] != want {
			t.Errorf("the SBOM of %s says %s=%q, want %q", bin, name, props[name], want)
		}
	}
	found := map[string]string{}
	for _, c := range sbom.Components {
		found[c.Name] = c.Version
	}
	for _, want := range []string{temporalSDKModule, mcpSDKModule, "golang.org/x/net"} {
		if found[want] == "" {
			t.Errorf("the SBOM of %s does not name %s", bin, want)
		}
	}
	if found["std"] != pinnedGo(t) {
		t.Errorf("the SBOM of %s names the standard library at %q, want %s", bin, found["std"], pinnedGo(t))
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
