package audit

import "syscall"

// availableBytes is the free space of fd's file system available to an
// unprivileged process. Linux counts blocks in fragment-size units
// (Frsize); Bsize is the preferred I/O size, which differs on some file
// systems (FUSE).
func availableBytes(fd int) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(fd, &st); err != nil {
		return 0, err
	}
	size := st.Frsize
	if size == 0 {
		size = st.Bsize
	}
	return int64(st.Bavail) * size, nil
}
