//go:build !unix

package connlimit

// DescriptorLimit cannot tell here: the system has no RLIMIT_NOFILE.
func DescriptorLimit() (int, bool) { return 0, false }
