//go:build !linux

package testmain

// isTmpfs is false off Linux: the temporary folders stay where TMPDIR
// says.
func isTmpfs(string) bool { return false }
