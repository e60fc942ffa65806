package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// releaseTools are the tools the release image's tests run, from the
// Makefile's environment, failing with the command that installs each.
func releaseTools(t *testing.T) (tool, cosign, helm, cdx string) {
	t.Helper()
	temporaltest.Needs(t, "cosign, helm, cyclonedx-gomod and bin/porthole-release")
	for _, v := range []struct{ env, make string }{
		{"PORTHOLE_RELEASE_TOOL", "make release-tool"}, {"PORTHOLE_COSIGN", "make cosign"},
		{"PORTHOLE_HELM", "make helm"}, {"PORTHOLE_CYCLONEDX", "make cyclonedx"},
	} {
		if p := os.Getenv(v.env); p == "" {
			t.Fatalf("%s is not set: run `%s`, or `make test`, which does", v.env, v.make)
		} else if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s: %v; run `%s`, or `make test`, which does", v.env, p, err, v.make)
		}
	}
	return os.Getenv("PORTHOLE_RELEASE_TOOL"), os.Getenv("PORTHOLE_COSIGN"), os.Getenv("PORTHOLE_HELM"), os.Getenv("PORTHOLE_CYCLONEDX")
}

// startRegistry runs porthole-release's OCI registry on loopback, its
// blobs in a directory a test may change, until the test ends.
func startRegistry(t *testing.T, tool string) (addr, blobs string) {
	t.Helper()
	blobs = filepath.Join(t.TempDir(), "blobs")
	cmd := exec.Command(tool, "registry", "-addr", "127.0.0.1:0", "-blobs", blobs)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "registry ") {
		t.Fatalf("the registry said %q: %v", line, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "registry ")), blobs
}

// cosignKeys makes a cosign key pair (password "pw") in a directory of
// its own and returns the private and public keys' paths.
func cosignKeys(t *testing.T, cosign string) (key, pub string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(cosign, "generate-key-pair")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "COSIGN_PASSWORD=pw")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	return filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")
}

// cosignVerify runs cosign verify (or verify-attestation, with its type)
// of ref with pub, offline: no transparency log, a trusted root that
// needs no fetch, and a HOME of the test's (cosign writes nothing of its
// own into the user's).
func cosignVerify(t *testing.T, cosign, pub, ref string, attestation bool) (string, error) {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "trusted_root.json")
	if err := os.WriteFile(root, []byte(`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"verify", "--key", pub, "--insecure-ignore-tlog", "--trusted-root", root, ref}
	if attestation {
		args = append([]string{"verify-attestation", "--type", "cyclonedx"}, args[1:]...)
	}
	cmd := exec.Command(cosign, args...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stderr.String(), err
	}
	return stdout.String(), nil
}

// runTool runs porthole-release and returns what it printed.
func runTool(tool string, args ...string) (string, error) {
	out, err := exec.Command(tool, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestAReleaseImageIsSignedAttestedAndVerifiedByDigest runs the release
// script as `make release` does with RELEASE_IMAGE set, against a real OCI
// registry on loopback (go-containerregistry's, with the referrers API):
// it builds the image index of the linux/amd64 and linux/arm64 binaries,
// pushes it, signs it and attests each binary's CycloneDX SBOM to it with
// cosign v2.6.5 and a throwaway key, offline. Then, by digest: cosign
// verifies the signature and the attestations (whose predicates are the
// SBOMs) with the public key, and porthole-release verify reads every
// blob against its digest. Refused: an image pushed but never signed, the
// right image under another key, a manifest swapped under the tag, and a
// layer changed in place in the registry's storage, which cosign (reading
// no layers) does not see and porthole-release verify does. The chart
// the release packages runs the image by its digest.
func TestAReleaseImageIsSignedAttestedAndVerifiedByDigest(t *testing.T) {
	tool, cosign, helm, cdx := releaseTools(t)
	t.Parallel()
	addr, blobs := startRegistry(t, tool)
	key, pub := cosignKeys(t, cosign)
	_, otherPub := cosignKeys(t, cosign)
	dist := runReleaseWithImage(t, tool, cosign, helm, cdx, addr+"/porthole", key, pub)
	digests := readImageDigests(t, filepath.Join(dist, "IMAGE"))
	ref := addr + "/porthole@" + digests["index"]
	if len(digests) != 3 || digests["linux/amd64"] == "" || digests["linux/arm64"] == "" {
		t.Fatalf("IMAGE: %v", digests)
	}
	checkImageHoldsTheBinaryAlone(t, filepath.Join(dist, "image"), dist)

	out, err := cosignVerify(t, cosign, pub, ref, false)
	if err != nil || !strings.Contains(out, digests["index"]) {
		t.Fatalf("cosign verify of the release: %v\n%s", err, out)
	}
	out, err = cosignVerify(t, cosign, pub, ref, true)
	if err != nil {
		t.Fatalf("cosign verify-attestation of the release: %v\n%s", err, out)
	}
	checkSBOMAttestations(t, out)
	if out, err := runTool(tool, "verify", ref); err != nil {
		t.Fatalf("porthole-release verify of the release: %v\n%s", err, out)
	}
	checkChartRunsTheDigest(t, helm, dist, ref)

	if out, err := cosignVerify(t, cosign, otherPub, ref, false); err == nil {
		t.Errorf("the release verified with another key:\n%s", out)
	}
	if out, err := runTool(tool, "push", "-layout", filepath.Join(dist, "image"), addr+"/unsigned:0.0.1"); err != nil {
		t.Fatalf("pushing the unsigned copy: %v\n%s", err, out)
	} else if out, err := cosignVerify(t, cosign, pub, out, false); err == nil {
		t.Errorf("an image pushed but never signed verified:\n%s", out)
	}
	swapUnderTheTag(t, tool, cosign, pub, addr, dist, ref)
	tamperALayer(t, tool, cosign, pub, filepath.Join(blobs, "sha256", strings.TrimPrefix(releaseLayer(t, filepath.Join(dist, "image")), "sha256:")), ref)
}

// releaseLayer is the digest of the linux/amd64 image's layer in a
// release's OCI layout.
func releaseLayer(t *testing.T, layout string) string {
	t.Helper()
	var index struct{ Manifests []ociDescriptor }
	b, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err != nil || json.Unmarshal(b, &index) != nil {
		t.Fatalf("the layout's index: %v %s", err, b)
	}
	for _, m := range index.Manifests {
		if m.Platform.Architecture == "amd64" {
			var manifest struct{ Layers []ociDescriptor }
			ociBlob(t, layout, m.Digest, &manifest)
			return manifest.Layers[0].Digest
		}
	}
	t.Fatal("the layout has no linux/amd64 image")
	return ""
}

// TestAReleaseSignedByAnotherCosignKeyIsRefusedBeforeItIsBuilt: with
// RELEASE_IMAGE, a cosign key that is not the one RELEASE_COSIGN_PUB holds
// stops the release before anything is built.
func TestAReleaseSignedByAnotherCosignKeyIsRefusedBeforeItIsBuilt(t *testing.T) {
	tool, cosign, helm, cdx := releaseTools(t)
	t.Parallel()
	key, _ := cosignKeys(t, cosign)
	_, otherPub := cosignKeys(t, cosign)
	dir := t.TempDir()
	sshKey, signers := throwawayReleaseKey(t, dir)
	cmd := exec.Command("sh", "deploy/release/release.sh")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "VERSION=0.0.1", "MAKE=make", "CYCLONEDX="+cdx, "RELEASE_SIGNING_KEY="+sshKey,
		"RELEASE_TARGETS=linux/amd64", "DIST="+filepath.Join(dir, "dist"), "ALLOWED_SIGNERS="+signers, "RELEASE_TOOL="+tool, "HELM="+helm,
		"COSIGN="+cosign, "RELEASE_IMAGE=127.0.0.1:1/porthole", "RELEASE_COSIGN_KEY="+key, "RELEASE_COSIGN_PUB="+otherPub, "COSIGN_PASSWORD=pw")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is not the key") || strings.Contains(string(out), "go build") {
		t.Fatalf("release.sh with another cosign key: %v\n%s", err, out)
	}
}

// runReleaseWithImage runs deploy/release/release.sh for linux/amd64 and
// linux/arm64 with the image pushed to image, signed with key; it returns
// the release's directory.
func runReleaseWithImage(t *testing.T, tool, cosign, helm, cdx, image, key, pub string) string {
	t.Helper()
	dir := t.TempDir()
	sshKey, signers := throwawayReleaseKey(t, dir)
	dist := filepath.Join(dir, "dist")
	cmd := exec.Command("sh", "deploy/release/release.sh")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "VERSION=0.0.1", "MAKE=make", "CYCLONEDX="+cdx, "RELEASE_SIGNING_KEY="+sshKey,
		"RELEASE_TARGETS=linux/amd64 linux/arm64", "DIST="+dist, "ALLOWED_SIGNERS="+signers, "RELEASE_TOOL="+tool, "HELM="+helm,
		"COSIGN="+cosign, "RELEASE_IMAGE="+image, "RELEASE_COSIGN_KEY="+key, "RELEASE_COSIGN_PUB="+pub, "COSIGN_PASSWORD=pw")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "pushed, signed and attested "+image+"@sha256:") {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	return dist
}

// readImageDigests reads a release's IMAGE: "index" and each platform, to
// their digests.
func readImageDigests(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	digests := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && strings.HasPrefix(v, "sha256:") && len(v) == 71 {
			digests[k] = v
		}
	}
	return digests
}

// ociBlob reads a blob of an OCI layout by digest, checking it.
func ociBlob(t *testing.T, layout, digest string, v any) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(layout, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:")))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("sha256:%x", sha256.Sum256(b)); got != digest {
		t.Fatalf("the blob %s holds %s", digest, got)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("the blob %s: %v", digest, err)
		}
	}
	return b
}

type ociDescriptor struct {
	MediaType string
	Digest    string
	Platform  struct{ OS, Architecture string }
}

// checkImageHoldsTheBinaryAlone reads the release's OCI layout: each
// platform's image is one layer holding one file, /porthole, the bytes of
// the release's binary for that platform; its config runs it as
// 65532:65532, created at the commit's time.
func checkImageHoldsTheBinaryAlone(t *testing.T, layout, dist string) {
	t.Helper()
	var index struct{ Manifests []ociDescriptor }
	b, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err != nil || json.Unmarshal(b, &index) != nil || len(index.Manifests) != 2 {
		t.Fatalf("the layout's index: %v %s", err, b)
	}
	when, _ := exec.Command("git", "log", "-1", "--format=%cI").Output()
	commitTime, _ := time.Parse(time.RFC3339, strings.TrimSpace(string(when)))
	for _, m := range index.Manifests {
		var manifest struct {
			Config ociDescriptor
			Layers []ociDescriptor
		}
		ociBlob(t, layout, m.Digest, &manifest)
		var config struct {
			Created      time.Time
			OS           string
			Architecture string
			Config       struct {
				User       string
				Entrypoint []string
			}
		}
		ociBlob(t, layout, manifest.Config.Digest, &config)
		if config.Config.User != "65532:65532" || strings.Join(config.Config.Entrypoint, " ") != "/porthole" ||
			!config.Created.Equal(commitTime) || config.OS != m.Platform.OS || config.Architecture != m.Platform.Architecture {
			t.Errorf("the %s/%s image's config: %+v", m.Platform.OS, m.Platform.Architecture, config)
		}
		if len(manifest.Layers) != 1 {
			t.Fatalf("the %s image has %d layers", m.Platform.Architecture, len(manifest.Layers))
		}
		files := layerFiles(t, ociBlob(t, layout, manifest.Layers[0].Digest, nil))
		bin, err := os.ReadFile(filepath.Join(dist, "porthole-0.0.1-linux-"+m.Platform.Architecture))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 1 || !bytes.Equal(files["porthole"], bin) {
			names := make([]string, 0, len(files))
			for n := range files {
				names = append(names, n)
			}
			sort.Strings(names)
			t.Errorf("the %s layer holds %v, want porthole alone, the release's binary", m.Platform.Architecture, names)
		}
	}
}

// layerFiles are the files of a gzipped tar layer, by name.
func layerFiles(t *testing.T, layer []byte) map[string][]byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
}

// checkSBOMAttestations reads cosign verify-attestation's output: one
// in-toto statement a line, whose predicate is a CycloneDX SBOM of
// porthole; one for each of the two binaries.
func checkSBOMAttestations(t *testing.T, out string) {
	t.Helper()
	arches := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var envelope struct{ Payload string }
		if err := json.Unmarshal([]byte(line), &envelope); err != nil {
			t.Fatalf("an attestation: %v: %.200s", err, line)
		}
		payload, err := base64.StdEncoding.DecodeString(envelope.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var statement struct {
			PredicateType string
			Predicate     struct {
				BOMFormat string
				Metadata  struct {
					Component  struct{ Name string }
					Properties []struct{ Name, Value string }
				}
			}
		}
		if err := json.Unmarshal(payload, &statement); err != nil {
			t.Fatal(err)
		}
		p := statement.Predicate
		if statement.PredicateType != "https://cyclonedx.org/bom" || p.BOMFormat != "CycloneDX" || p.Metadata.Component.Name != module {
			t.Errorf("an attestation's statement: %s %s %s", statement.PredicateType, p.BOMFormat, p.Metadata.Component.Name)
		}
		for _, prop := range p.Metadata.Properties {
			if prop.Name == "cdx:gomod:build:env:GOARCH" {
				arches[prop.Value] = true
			}
		}
	}
	if !arches["amd64"] || !arches["arm64"] || len(arches) != 2 {
		t.Errorf("the attested SBOMs are of %v, want amd64 and arm64", arches)
	}
}

// checkChartRunsTheDigest renders the chart the release packaged: its
// porthole container runs ref.
func checkChartRunsTheDigest(t *testing.T, helm, dist, ref string) {
	t.Helper()
	charts, _ := filepath.Glob(filepath.Join(dist, "porthole-*.tgz"))
	if len(charts) != 1 {
		t.Fatalf("the release packaged %v", charts)
	}
	cmd := exec.Command(helm, "template", "demo", charts[0], "--set", "temporal.address=temporal:7233", "--set", "temporal.namespace=orders",
		"--set", "tokensSecret.name=t", "--set", "adminTokensSecret.name=a", "--set", "auditKeySecret.name=k", "--set", "auditSigningKeySecret.name=s")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `image: "`+ref+`"`) {
		t.Fatalf("the released chart does not run %s: %v\n%.3000s", ref, err, out)
	}
}

// swapUnderTheTag pushes another image under the release's tag: cosign
// refuses the tag, which now names an unsigned manifest, and still
// verifies the release by its digest.
func swapUnderTheTag(t *testing.T, tool, cosign, pub, addr, dist, ref string) {
	t.Helper()
	other := filepath.Join(t.TempDir(), "other")
	if out, err := runTool(tool, "image", "-out", other, "-created", "2026-01-01T00:00:00Z", "-version", "6.6.6", "-revision", "another",
		"linux/amd64="+filepath.Join(dist, "porthole-0.0.1-linux-amd64")); err != nil {
		t.Fatalf("another image: %v\n%s", err, out)
	}
	if out, err := runTool(tool, "push", "-layout", other, addr+"/porthole:0.0.1"); err != nil {
		t.Fatalf("pushing under the tag: %v\n%s", err, out)
	}
	if out, err := cosignVerify(t, cosign, pub, addr+"/porthole:0.0.1", false); err == nil {
		t.Errorf("a manifest swapped under the tag verified:\n%s", out)
	}
	if out, err := cosignVerify(t, cosign, pub, ref, false); err != nil {
		t.Errorf("the release by digest, after the tag moved: %v\n%s", err, out)
	}
}

// tamperALayer changes a byte of a layer of the release in the
// registry's storage (the file blob), in place: cosign, which reads no
// layers, still verifies the signature; porthole-release verify refuses
// the image.
func tamperALayer(t *testing.T, tool, cosign, pub, blob, ref string) {
	t.Helper()
	info, err := os.Stat(blob)
	if err != nil {
		t.Fatalf("the release's layer in the registry: %v", err)
	}
	size := info.Size()
	f, err := os.OpenFile(blob, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{0}
	if _, err := f.ReadAt(b, size/2); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, size/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := cosignVerify(t, cosign, pub, ref, false); err != nil {
		t.Errorf("cosign verify after a layer changed (it reads no layers, so it should still pass): %v\n%s", err, out)
	}
	if out, err := runTool(tool, "verify", ref); err == nil {
		t.Errorf("porthole-release verify passed an image whose layer changed in place:\n%s", out)
	}
}
