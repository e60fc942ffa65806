package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// user is the image's user: not root, and the uid distroless calls
// nonroot, so volumes prepared for the Dockerfile's image fit this one.
const user = "65532:65532"

// runImage writes the release's image index to an OCI layout.
func runImage(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	out := fs.String("out", "", "the OCI layout directory to write (must not exist)")
	created := fs.String("created", "", "the images' creation time, RFC 3339: the commit's")
	version := fs.String("version", "", "the release's version, for the OCI labels")
	revision := fs.String("revision", "", "the commit, for the OCI labels")
	if err := fs.Parse(args); err != nil {
		return err
	}
	at, err := time.Parse(time.RFC3339, *created)
	if *out == "" || err != nil || *version == "" || *revision == "" || fs.NArg() == 0 {
		return fmt.Errorf("image needs -out, -created (RFC 3339), -version, -revision and OS/ARCH=BINARY arguments")
	}
	// In one order whatever the arguments', so that the index is one.
	platforms := slices.Sorted(slices.Values(fs.Args()))
	seen := map[string]bool{}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arg := range platforms {
		platform, bin, ok := strings.Cut(arg, "=")
		osName, arch, ok2 := strings.Cut(platform, "/")
		if !ok || !ok2 || seen[platform] {
			return fmt.Errorf("%q is not OS/ARCH=BINARY, or names a platform twice", arg)
		}
		seen[platform] = true
		img, err := image(bin, osName, arch, at.UTC(), labels(*version, *revision))
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}}})
	}
	if _, err := os.Stat(*out); err == nil {
		return fmt.Errorf("%s exists", *out)
	}
	if _, err := layout.Write(*out, idx); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Println(d)
	return nil
}

// labels are the OCI labels the Dockerfile's image carries too.
func labels(version, revision string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "porthole",
		"org.opencontainers.image.source":   "https://github.com/porthole-dev/porthole",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
}

// image is one platform's image: FROM scratch, the binary at /porthole,
// run as user with the Dockerfile's entrypoint, command, ports and
// listener addresses, every time in it at.
func image(bin, osName, arch string, at time.Time, labels map[string]string) (v1.Image, error) {
	content, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	layerTar, err := binaryTar(content, at)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: at}, CreatedBy: "porthole-release image"}}); err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = osName, arch, v1.Time{Time: at}
	cfg.Config = v1.Config{
		User:         user,
		Entrypoint:   []string{"/porthole"},
		Cmd:          []string{"serve"},
		Env:          []string{"PORTHOLE_ADDR=0.0.0.0:8082", "PORTHOLE_ADMIN_ADDR=0.0.0.0:9090"},
		ExposedPorts: map[string]struct{}{"8082/tcp": {}, "9090/tcp": {}},
		Labels:       labels,
	}
	return mutate.ConfigFile(img, cfg)
}

// binaryTar is a tar of one file, porthole, mode 0755, owned by root,
// modified at at: nothing of the machine that built it.
func binaryTar(content []byte, at time.Time) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: "porthole", Mode: 0o755, Size: int64(len(content)), ModTime: at, Format: tar.FormatUSTAR}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(content); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
