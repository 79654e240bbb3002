package connlimit

// Auto is the Max a process whose descriptor limit is limit can afford:
// the limit less [Reserve]; 10,000 when the limit is unknown (0).
func Auto(limit int) int {
	if limit <= 0 {
		return 10000
	}
	return max(limit-Reserve(limit), 0)
}

// Reserve is how many of limit descriptors Auto keeps for the process's
// other files (its pools, listeners, logs): an eighth, at least 256.
func Reserve(limit int) int { return max(256, limit/8) }
