//go:build unix

package upstream

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts a stdio child in a process group of its own and
// makes stopping it kill the whole group: a server started through a
// launcher (npx, uvx, a shell script) leaves no grandchild behind. The
// function it returns kills the group; it is for after the child's session
// has ended, when the child may have exited on its own and left the rest
// of its group running.
func ownProcessGroup(cmd *exec.Cmd) (killGroup func()) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	kill := func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.Cancel = kill
	return func() { _ = kill() }
}
