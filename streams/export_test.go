package streams

import "context"

// LiveSnapshotOf is the snapshot a live stream of p, of ctx, sends now.
func LiveSnapshotOf(ctx context.Context, p *Plane) LiveSnapshot { return p.live.snapshot(ctx, p) }

// Keys returns the shards' stream keys, in order.
func (h *ShardedRedisHub) Keys() []string {
	keys := make([]string, len(h.shards))
	for i, s := range h.shards {
		keys[i] = s.key
	}
	return keys
}

// Everyone is the To of an event to every user.
const Everyone = everyone

// KeySlot is keySlot.
var KeySlot = keySlot

// ErrSlow is errSlow.
var ErrSlow = errSlow

// Reserve is reserve.
func (r *RedisCap) Reserve(ctx context.Context, key string) (capSlot, int, bool, error) {
	return r.reserve(ctx, key)
}
