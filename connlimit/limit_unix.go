//go:build unix

package connlimit

import "syscall"

// DescriptorLimit is how many files the process may have open
// (RLIMIT_NOFILE: its soft limit, which Go raises to the hard limit as
// the program starts), and whether the system could say. An unlimited
// limit is reported as 1<<20, Linux's default ceiling.
func DescriptorLimit() (int, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, false
	}
	return int(min(uint64(l.Cur), 1<<20)), true
}
