package streams

// LiveSnapshotOf is the snapshot a live stream of p sends now.
func LiveSnapshotOf(p *Plane) LiveSnapshot { return p.live.snapshot(p) }
