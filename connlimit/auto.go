package connlimit

// Auto is the Max a process whose descriptor limit is limit can afford:
// the limit less [Reserve]. Where the limit is unknown (ok false from
// [DescriptorLimit]) it is given as 0, and Auto is 10,000.
func Auto(limit int) int {
	if limit <= 0 {
		return 10000
	}
	return max(limit-Reserve(limit), 0)
}

// Reserve is how many of limit descriptors Auto keeps for the process's
// other files: an eighth of them, and at least 256. A server's own files
// are few and bounded (a database pool, a Redis pool, a metrics listener,
// its logs, the runtime's poller), some tens to a few hundred; an eighth
// leaves that room at any common limit (512 of 4096, 2,500 of 20,000),
// and the refusal of a connection over the cap briefly holds one more.
func Reserve(limit int) int { return max(256, limit/8) }
