//go:build unix

package githubtest

import (
	"io/fs"
	"syscall"
)

// inode is the file's inode number: a file moved onto a path gets a new one.
func inode(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino) //nolint:unconvert // uint32 on some systems
	}
	return 0
}
