package streams

import (
	"context"
	"strings"
	"time"
)

// TakeSnapshot takes a live snapshot now, as p does every second, and
// returns the snapshots p keeps, oldest first.
func TakeSnapshot(ctx context.Context, p *Runtime) []LiveSnapshot {
	p.live.take(ctx, p)
	return p.live.since(time.Time{})
}

// HistoryLen is historyLen.
const HistoryLen = historyLen

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

// The SSE transport, for its tests.
type Conn = sseConn

var (
	NewConn        = newSSEConn
	AppendEvent    = appendEvent
	ErrNotJSON     = errNotJSON
	MaxClientInput = maxClientInput
)

// Loop is loop.
func Loop[T any](ctx context.Context, heartbeat time.Duration, closing, probe <-chan struct{}, source <-chan T,
	send func(v T, ok bool) error, beat, ping func() error, shutdown func()) {
	loop(ctx, heartbeat, closing, probe, source, send, beat, ping, shutdown)
}

// CompareIDs returns -1, 0 or +1 as event id a is before, equal to or
// after b: by their millisecond, then their sequence, as Redis orders a
// stream's ids ("9-5" is before "10-0", though not as strings).
//
// It never fails, whatever its input: a string that is not an id of the
// hubs' form ("<ms>-<seq>", decimal, without leading zeros, at most 41
// bytes) orders before every id, and two such strings order as strings
// do. So sorting by CompareIDs is a total order on any strings.
func CompareIDs(a, b string) int {
	x, okA := parseID(a)
	y, okB := parseID(b)
	switch {
	case okA && okB:
		return x.compare(y)
	case okA:
		return 1
	case okB:
		return -1
	}
	return strings.Compare(a, b)
}

// TookOver reports whether Start took the connection over.
func (c *sseConn) TookOver() bool { return c.conn != nil }
