package main

import "runtime/debug"

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

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
