package testmain

import "syscall"

// tmpfsMagic is the file system type of a tmpfs (statfs(2)).
const tmpfsMagic = 0x01021994

// isTmpfs reports whether dir is a folder of a tmpfs.
func isTmpfs(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Type == tmpfsMagic
}
