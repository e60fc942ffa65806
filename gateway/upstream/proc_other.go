//go:build !unix

package upstream

import "os/exec"

// ownProcessGroup is a no-op where process groups are not available.
func ownProcessGroup(*exec.Cmd) (killGroup func()) { return func() {} }
