package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// runPush pushes an OCI layout's index to a reference, with the
// credentials docker login (or a credential helper) keeps for its
// registry.
func runPush(args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	dir := fs.String("layout", "", "the OCI layout `image` wrote")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() != 1 {
		return errors.New("push needs -layout DIR and one REF")
	}
	ref, err := name.ParseReference(fs.Arg(0), name.StrictValidation)
	if err != nil {
		return err
	}
	idx, d, err := layoutIndex(*dir)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return err
	}
	fmt.Println(ref.Context().Digest(d.String()).String())
	return nil
}

// layoutIndex is the image index of the OCI layout at dir, and its digest.
func layoutIndex(dir string) (v1.ImageIndex, v1.Hash, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, v1.Hash{}, err
	}
	d, err := idx.Digest()
	return idx, d, err
}

// runDigests prints a layout's index digest, then each platform's.
func runDigests(args []string) error {
	fs := flag.NewFlagSet("digests", flag.ContinueOnError)
	dir := fs.String("layout", "", "the OCI layout `image` wrote")
	if err := fs.Parse(args); err != nil {
		return err
	}
	idx, d, err := layoutIndex(*dir)
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	fmt.Println("index", d)
	for _, desc := range m.Manifests {
		if desc.Platform == nil {
			return fmt.Errorf("the manifest %s names no platform", desc.Digest)
		}
		fmt.Println(desc.Platform.OS+"/"+desc.Platform.Architecture, desc.Digest)
	}
	return nil
}

// runVerify pulls the index ref names and each image in it, reading
// every blob, and checks each against its digest and size.
func runVerify(args []string) error {
	if len(args) != 1 {
		return errors.New("verify needs one REF")
	}
	ref, err := name.ParseReference(args[0], name.StrictValidation)
	if err != nil {
		return err
	}
	idx, err := remote.Index(ref, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return err
	}
	// validate.Index reads the index's manifests and, through them, every
	// layer of every image.
	if err := validate.Index(idx); err != nil {
		return fmt.Errorf("%s does not match its digests: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Println("verified", ref.Context().Digest(d.String()))
	return nil
}

// diskBlobs keeps a registry's blobs in files named by their digests, and
// serves them as they are on disk, unchecked, as object storage behind a
// registry does: a blob changed in place is served changed, which is what
// verify must catch. (go-containerregistry's own disk handler checks each
// blob's digest as it serves it.)
type diskBlobs string

func (d diskBlobs) path(h v1.Hash) string { return filepath.Join(string(d), h.Algorithm, h.Hex) }

func (d diskBlobs) Stat(_ context.Context, _ string, h v1.Hash) (int64, error) {
	fi, err := os.Stat(d.path(h))
	if errors.Is(err, os.ErrNotExist) {
		return 0, registry.ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (d diskBlobs) Get(_ context.Context, _ string, h v1.Hash) (io.ReadCloser, error) {
	f, err := os.Open(d.path(h))
	if errors.Is(err, os.ErrNotExist) {
		return nil, registry.ErrNotFound
	}
	return f, err
}

func (d diskBlobs) Put(_ context.Context, _ string, h v1.Hash, rc io.ReadCloser) error {
	defer rc.Close()
	if err := os.MkdirAll(filepath.Dir(d.path(h)), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(d.path(h)), "upload-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), d.path(h))
}

// runRegistry serves an OCI registry with the referrers API until killed.
func runRegistry(args []string) error {
	fs := flag.NewFlagSet("registry", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "the address to listen on")
	blobs := fs.String("blobs", "", "the directory blobs are kept in")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *blobs == "" {
		return errors.New("registry needs -blobs DIR")
	}
	if err := os.MkdirAll(*blobs, 0o755); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Println("registry", ln.Addr())
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second,
		Handler: registry.New(registry.WithReferrersSupport(true), registry.WithBlobHandler(diskBlobs(*blobs)))}
	return srv.Serve(ln)
}
