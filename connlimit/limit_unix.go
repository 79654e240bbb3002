//go:build unix

package connlimit

import "syscall"

// DescriptorLimit is how many files the process may have open (its
// RLIMIT_NOFILE, at most 1<<20), and whether the system could say.
func DescriptorLimit() (int, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, false
	}
	return int(min(uint64(l.Cur), 1<<20)), true
}
