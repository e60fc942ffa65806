package main

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// No Docker engine runs here, so the Dockerfile is checked by reading it,
// and its build stage is run as it stands: the same go build command, whose
// binary must be static and must run.

func dockerfile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDockerfileShape(t *testing.T) {
	t.Parallel()
	d := dockerfile(t)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)(?:\s+AS\s+(\S+))?`).FindAllStringSubmatch(d, -1)
	if len(froms) != 2 || froms[0][2] != "build" {
		t.Fatalf("want a build stage and a final stage, got %v", froms)
	}
	if final := froms[1][1]; !strings.HasPrefix(final, "gcr.io/distroless/static") || !strings.HasSuffix(final, ":nonroot") {
		t.Errorf("the final stage is %s, want distroless static nonroot (no shell, no package manager)", final)
	}
	users := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindAllStringSubmatch(d, -1)
	if len(users) != 1 || strings.HasPrefix(users[0][1], "0") || strings.HasPrefix(users[0][1], "root") {
		t.Errorf("USER lines %v, want one non-root user", users)
	}
	finalStage := d[strings.LastIndex(d, "\nFROM "):]
	if regexp.MustCompile(`(?m)^RUN `).MatchString(finalStage) {
		t.Error("the final stage runs a command; it has no shell to run one with")
	}
	for _, want := range []string{"EXPOSE 8082 9090", `ENTRYPOINT ["/porthole"]`, "CGO_ENABLED=0", "-trimpath",
		"-X main.version=${VERSION}", "-X main.commit=${REVISION}", "-X main.commitTime=${COMMIT_TIME}",
		`org.opencontainers.image.source="https://github.com/porthole-dev/porthole"`, `org.opencontainers.image.version="${VERSION}"`,
		`org.opencontainers.image.revision="${REVISION}"`, `org.opencontainers.image.licenses="Apache-2.0"`} {
		if !strings.Contains(d, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
}

func TestDockerfileBuildStageMakesAStaticBinary(t *testing.T) {
	t.Parallel()
	m := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build .*) -o /out/porthole (\./cmd/porthole)$`).FindStringSubmatch(dockerfile(t))
	if m == nil {
		t.Fatal("no go build line in the build stage")
	}
	out := filepath.Join(t.TempDir(), "porthole")
	cmd := exec.Command("sh", "-c", m[1]+" -o "+out+" "+m[2])
	cmd.Dir = "../.."
	// The build arguments, as `docker build --build-arg` passes them.
	cmd.Env = append(os.Environ(), "VERSION=9.8.7", "REVISION=0123456789abcdef0123456789abcdef01234567", "COMMIT_TIME=2026-12-01T00:00:00Z")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", m[1], err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary asks for a dynamic loader; distroless/static has none")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Fatalf("the binary links %v", libs)
	}
	if b, err := exec.Command(out, "version").Output(); err != nil || !strings.HasPrefix(string(b), "porthole 9.8.7\ncommit 0123456789abcdef0123456789abcdef01234567, committed 2026-12-01T00:00:00Z\n") {
		t.Fatalf("the built binary does not run, or does not say what it is: %v %q", err, b)
	}
}

// TestTheDockerfileBuildsTheReleasesBinary: the Dockerfile's build
// command, given the build arguments of a release of this commit, makes
// the same bytes as `make binary` for linux/amd64, which a release (and
// its image) holds.
func TestTheDockerfileBuildsTheReleasesBinary(t *testing.T) {
	t.Parallel()
	m := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build .*) -o /out/porthole (\./cmd/porthole)$`).FindStringSubmatch(dockerfile(t))
	if m == nil {
		t.Fatal("no go build line in the build stage")
	}
	head, _ := exec.Command("git", "rev-parse", "HEAD").Output()
	when, _ := exec.Command("git", "log", "-1", "--format=%cI").Output()
	dir := t.TempDir()
	docker := exec.Command("sh", "-c", m[1]+" -o "+filepath.Join(dir, "docker")+" "+m[2])
	docker.Dir = "../.."
	// As the Dockerfile's golang image builds: linux/amd64, the pinned Go.
	docker.Env = append(os.Environ(), "VERSION=0.0.1", "REVISION="+strings.TrimSpace(string(head)), "COMMIT_TIME="+strings.TrimSpace(string(when)),
		"GOOS=linux", "GOARCH=amd64", "GOTOOLCHAIN="+pinnedGo(t))
	if b, err := docker.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", m[1], err, b)
	}
	// MODIFIED= as a release's clean tree has it, whatever this tree is.
	release := exec.Command("make", "--no-print-directory", "binary", "VERSION=0.0.1", "MODIFIED=", "OUT="+filepath.Join(dir, "release"))
	release.Dir = "../.."
	if b, err := release.CombinedOutput(); err != nil {
		t.Fatalf("make binary: %v\n%s", err, b)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "docker"))
	b, _ := os.ReadFile(filepath.Join(dir, "release"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("the Dockerfile's build (%d bytes) and the release's (%d bytes) differ", len(a), len(b))
	}
}
