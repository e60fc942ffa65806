// Package temporaltest starts a real Temporal dev server and seeds it with
// sample workflows whose every payload and free-text field holds a canary.
//
// It writes to Temporal (it starts workflows, runs a worker, creates a
// schedule), so it must never be in the porthole binary's dependency graph;
// a test in cmd/porthole proves it is not. Tests and the demo use it; a test
// package shares one seeded server through [Shared], which the first test
// that needs it starts and which is skipped under -short.
//
// # Two tiers
//
// `make unit` runs `go test -short`: every test that needs nothing beyond Go
// and this repository. A test that needs a real component (the Temporal dev
// server, the npm clients, helm) calls [Needs] first, which skips it under
// -short with the component's name. Without -short, as `make test` runs, the
// test goes on and fails, never skips, when the component is missing, with
// the command that installs it: a suite that skips what it cannot find
// passes on a machine that checked nothing.
//
// # Waiting
//
// [Poll] and [Eventually] are the one loop that waits for a condition in
// the tests of cmd/porthole and temporal. They try often at first and less
// often later, so that a quick condition is seen quickly and a slow one,
// such as a visibility query the dev server throttles, is not hammered
// while it settles.
package temporaltest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// CLIVersion is the Temporal CLI the scripts install: the newest that
// installs from the Go module proxy (later ones carry a replace directive).
const CLIVersion = "v1.5.1"

// CLIEnv names the variable that points at the Temporal CLI binary.
const CLIEnv = "PORTHOLE_TEMPORAL_CLI"

// CustomSearchAttribute is a keyword attribute the dev server registers so the
// seeder can put a canary into a search-attribute value.
const CustomSearchAttribute = "PortholeCanaryKeyword"

// DefaultCLIPath is where `make temporal-cli` installs the CLI.
func DefaultCLIPath() string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "porthole", "temporal-cli-"+CLIVersion, "temporal")
}

// CLIPath finds the Temporal CLI: $PORTHOLE_TEMPORAL_CLI, else the default
// install location. It fails with the command that installs it.
func CLIPath() (string, error) {
	p := os.Getenv(CLIEnv)
	if p == "" {
		p = DefaultCLIPath()
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("the Temporal CLI is not at %s (run `make temporal-cli`, or set %s): %w", p, CLIEnv, err)
	}
	return p, nil
}

// DevServer is a running `temporal server start-dev`.
type DevServer struct {
	*testsuite.DevServer
	Namespace string
}

// Options shape the dev server.
type Options struct {
	// HostPort binds the frontend; empty picks a free loopback port.
	HostPort string
	// Namespace is registered at start; empty means "default".
	Namespace string
	// Output receives the server's own log; nil discards it.
	Output io.Writer
	// ExtraArgs go to `temporal server start-dev`, for example
	// --dynamic-config-value settings.
	ExtraArgs []string
}

// Start starts a dev server on loopback and waits until it answers.
func Start(ctx context.Context, opts Options) (*DevServer, error) {
	path, err := CLIPath()
	if err != nil {
		return nil, err
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	out := opts.Output
	if out == nil {
		out = io.Discard
	}
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath: path,
		ClientOptions: &client.Options{
			HostPort:  opts.HostPort,
			Namespace: opts.Namespace,
			Logger:    Quiet(),
		},
		LogLevel:  "error",
		Stdout:    out,
		Stderr:    out,
		ExtraArgs: opts.ExtraArgs,
		SearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(CustomSearchAttribute).ValueSet("registration"),
		),
	})
	if err != nil {
		return nil, fmt.Errorf("starting the Temporal dev server: %w", err)
	}
	return &DevServer{DevServer: srv, Namespace: opts.Namespace}, nil
}

// Stop stops the server and waits for it to exit.
func (d *DevServer) Stop() error {
	err := d.DevServer.Stop()
	if err != nil && errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// quietLogger drops the SDK's log lines below warning.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

// Quiet is an SDK logger that drops everything: the seed worker's activities
// fail on purpose, and their error lines would only bury test output.
func Quiet() sdklog.Logger { return quietLogger{} }
