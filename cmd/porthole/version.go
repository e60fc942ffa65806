package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/porthole-dev/porthole/gateway"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...
// -X main.commitTime=... -X main.modified=true": the Makefile sets them
// from VERSION (else `git describe --always --dirty`) and from git. Where
// they are unset, the toolchain's VCS stamp is read (builds run with
// -buildvcs=false on these machines, so the Makefile stamps them itself).
var version, commit, commitTime, modified string

// Version is the build's version: the one set at build time, else the module
// version or VCS revision the Go toolchain recorded, else "dev".
func Version() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "dev-" + s.Value[:12]
		}
	}
	return "dev"
}

// The modules whose versions a build names.
const (
	temporalSDKModule = "go.temporal.io/sdk"
	mcpSDKModule      = "github.com/modelcontextprotocol/go-sdk"
)

// buildInfo is what the binary says of itself, from its own build info:
// the commit's time rather than the build's, so that two builds of one
// commit are the same bytes.
func buildInfo() gateway.BuildInfo {
	b := gateway.BuildInfo{Version: Version(), Commit: "unknown", TemporalSDK: "unknown", MCPSDK: "unknown"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.GoVersion = info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.CommitTime = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	if commit != "" {
		b.Commit, b.CommitTime, b.Modified = commit, commitTime, modified == "true"
	}
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		switch d.Path {
		case temporalSDKModule:
			b.TemporalSDK = d.Version
		case mcpSDKModule:
			b.MCPSDK = d.Version
		}
	}
	return b
}

// buildField is buildInfo for the startup line of the operations log.
func buildField() zap.Field {
	b := buildInfo()
	return zap.Object("build", zapcore.ObjectMarshalerFunc(func(e zapcore.ObjectEncoder) error {
		e.AddString("version", b.Version)
		e.AddString("commit", b.Commit)
		if b.CommitTime != "" {
			e.AddString("commitTime", b.CommitTime)
		}
		if b.Modified {
			e.AddBool("modified", true)
		}
		e.AddString("goVersion", b.GoVersion)
		e.AddString("temporalSdk", b.TemporalSDK)
		e.AddString("mcpSdk", b.MCPSDK)
		return nil
	}))
}

// runVersion prints buildInfo, as text or (--json) JSON.
func runVersion(args []string, stdout, stderr io.Writer) int {
	asJSON := false
	for _, a := range args {
		switch a {
		case "--json", "-json":
			asJSON = true
		default:
			fmt.Fprintf(stderr, "porthole version: unknown argument %q (only --json)\n", a)
			return 2
		}
	}
	b := buildInfo()
	if asJSON {
		out, _ := json.Marshal(b)
		fmt.Fprintln(stdout, string(out))
		return 0
	}
	commit := b.Commit
	if b.Modified {
		commit += " (with uncommitted changes)"
	}
	if b.CommitTime != "" {
		commit += ", committed " + b.CommitTime
	}
	fmt.Fprintf(stdout, "porthole %s\ncommit %s\n%s\n%s %s\n%s %s\n", b.Version, commit, b.GoVersion, temporalSDKModule, b.TemporalSDK, mcpSDKModule, b.MCPSDK)
	return 0
}
