package audit

import "syscall"

// availableBytes is the free space of fd's file system available to an
// unprivileged process: on Darwin, blocks of Bsize bytes.
func availableBytes(fd int) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(fd, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
