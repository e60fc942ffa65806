//go:build unix

package upstream

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts a stdio child in a process group of its own and
// makes stopping it kill the whole group: a server started through a
// launcher (npx, uvx, a shell script) leaves no grandchild behind.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
