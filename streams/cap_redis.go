package streams

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// capScript counts one stream of a key in Redis, in one round trip. The
// key is a sorted set with one member per live stream, scored with the
// end of its lease in ms on the Redis server's clock (TIME), so replicas
// whose clocks disagree share one cap. A member whose lease holds is
// extended; a new or expired one first drops the expired members (the
// streams of a replica that died) and takes a place only if the key has
// one. The set lives as long as its newest lease.
//
// KEYS[1] the key's set. ARGV[1] max, ARGV[2] the lease in ms, ARGV[3] the
// stream's member. Returns the live count when the stream is counted, else
// minus it (max is at least 1, so a refusal is negative).
const capScript = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local s = redis.call('ZSCORE', KEYS[1], ARGV[3])
if not s or tonumber(s) <= now then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  local n = redis.call('ZCARD', KEYS[1])
  if n >= tonumber(ARGV[1]) then return -n end
end
redis.call('ZADD', KEYS[1], string.format('%d', now + ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('ZCARD', KEYS[1])
`

var capLua = rueidis.NewLuaScript(capScript)

// redisTimeout bounds each call a RedisCap makes to Redis.
const redisTimeout = 100 * time.Millisecond

// errSlotLost is what refresh returns when the slot's lease had ended in
// Redis and its key has no place left for it: end the stream, and its
// client's reconnection reserves a new slot.
var errSlotLost = errors.New("streams: the stream's slot is no longer counted in Redis and its key is full")

// RedisCap caps streams across every replica that uses the same Redis and
// prefix. Create it with [NewRedisCap]; it is safe for concurrent use.
//
// Each stream holds a lease in Redis, refreshed at each heartbeat; a
// replica that dies never releases its slots, and they expire a lease
// after their last refresh. With a fallback, this replica's streams are
// also counted in memory: a key that holds max streams here is refused
// without a call, and while Redis fails the fallback admits (so a key may
// hold up to replicas × max streams until Redis answers). Then each
// stream's next refresh counts it in Redis again, or ends it when its key
// is full, and the leases whose release failed are removed.
type RedisCap struct {
	client   rueidis.Client
	prefix   string
	max      int
	maxArg   string // max, as the script reads it
	leaseArg string // the lease in ms
	fallback *MemoryCap

	// unreleased are leases whose release could not reach Redis, to be
	// removed once it answers; flushing says a call is removing them.
	mu         sync.Mutex
	unreleased []lease
	flushing   atomic.Bool

	// Timeout bounds each call to Redis (100 ms from NewRedisCap); a call
	// that takes longer counts as Redis failing. Set it before use.
	Timeout time.Duration

	// OnError, when set, is told each failure of Redis the caller does not
	// see (a reserve the fallback served, a failed release). It must not
	// block.
	OnError func(error)
}

// A lease is one stream's member in its key's set.
type lease struct{ key, member string }

// maxUnreleased bounds the leases a RedisCap remembers to remove; the
// ones past it expire with their leases.
const maxUnreleased = 10000

// NewRedisCap returns a cap of max streams per key in Redis, its keys
// "<prefix>streams:<key>". lease is how long a slot outlives its last
// refresh. fallback, NewMemoryCap(max) or nil, counts this replica's
// streams and admits while Redis fails. It panics if max < 1, lease < 1 ms
// or the fallback's max is not max.
func NewRedisCap(client rueidis.Client, prefix string, max int, lease time.Duration, fallback *MemoryCap) *RedisCap {
	if max < 1 {
		panic("streams: NewRedisCap needs a max of at least 1 stream per key")
	}
	if lease < time.Millisecond {
		panic("streams: NewRedisCap needs a lease of at least 1 ms")
	}
	if fallback != nil && fallback.capacity() != max {
		panic("streams: NewRedisCap needs a fallback of the same max: it counts the same streams")
	}
	ms := (lease + time.Millisecond - 1) / time.Millisecond // rounded up
	return &RedisCap{
		client:   client,
		prefix:   prefix + "streams:",
		max:      max,
		maxArg:   strconv.Itoa(max),
		leaseArg: strconv.FormatInt(int64(ms), 10),
		fallback: fallback,
		Timeout:  redisTimeout,
	}
}

func (r *RedisCap) capacity() int { return r.max }

// reserve takes one of key's slots in Redis. When Redis fails, it admits
// from the fallback's count and tells OnError; it returns an error only
// when ctx ends first, or Redis fails without a fallback. A reserve that
// timed out may still have been admitted: the slot holds that lease.
func (r *RedisCap) reserve(ctx context.Context, key string) (s capSlot, live int, ok bool, err error) {
	s = capSlot{owner: r, key: key, lease: rand.Text()}
	local := 0
	if r.fallback != nil {
		var mine capSlot
		if mine, local, ok = r.fallback.reserveKey(key); !ok {
			return capSlot{}, local, false, nil
		}
		s.id, s.at = mine.id, mine.at
	}
	n, err := r.count(ctx, s)
	switch {
	case err != nil && ctx.Err() != nil: // the caller giving up is not an outage
		r.releaseLocal(s)
		return capSlot{}, 0, false, fmt.Errorf("streams: redis: %w", ctx.Err())
	case err != nil && r.fallback == nil:
		return capSlot{}, 0, false, fmt.Errorf("streams: redis: reserving a stream's slot: %w", err)
	case err != nil:
		r.onError(fmt.Errorf("streams: redis: reserving a stream's slot failed, so this replica's own count admitted it: %w", err))
		return s, local, true, nil
	case n < 0:
		r.releaseLocal(s)
		return capSlot{}, int(-n), false, nil
	}
	r.flush(ctx)
	return s, int(n), true, nil
}

// refreshSlot keeps s counted in Redis. It returns errSlotLost when s's
// key had no place for it, even once the failed releases were flushed.
func (r *RedisCap) refreshSlot(ctx context.Context, s capSlot) error {
	n, err := r.count(ctx, s)
	if err == nil && r.flush(ctx) && n < 0 {
		n, err = r.count(ctx, s) // the leases of streams that ended may have filled its key
	}
	if err != nil {
		return fmt.Errorf("streams: redis: refreshing a stream's slot (the stream keeps it until its lease ends; refresh again at the next heartbeat): %w", err)
	}
	if n < 0 {
		return errSlotLost
	}
	return nil
}

// count runs capScript for s.
func (r *RedisCap) count(ctx context.Context, s capSlot) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	return capLua.Exec(ctx, r.client, []string{r.prefix + s.key}, []string{r.maxArg, r.leaseArg, s.lease}).AsInt64()
}

// releaseSlot removes s's lease and its place in this replica's count.
// When Redis fails, the lease is removed once Redis answers again.
func (r *RedisCap) releaseSlot(s capSlot) {
	r.releaseLocal(s)
	ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
	defer cancel()
	err := r.client.Do(ctx, r.client.B().Zrem().Key(r.prefix+s.key).Member(s.lease).Build()).Error()
	if err != nil {
		r.remember(lease{s.key, s.lease})
		r.onError(fmt.Errorf("streams: redis: releasing a stream's slot failed; it is released when Redis answers again, or expires with its lease: %w", err))
	}
}

func (r *RedisCap) releaseLocal(s capSlot) {
	if r.fallback != nil && s.id != 0 {
		r.fallback.releaseSlot(s)
	}
}

func (r *RedisCap) remember(l lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.unreleased) < maxUnreleased {
		r.unreleased = append(r.unreleased, l)
	}
}

// flush removes the leases whose release failed, in one round trip, one
// caller at a time, keeping those it cannot remove. It reports whether
// there were any.
func (r *RedisCap) flush(ctx context.Context) bool {
	r.mu.Lock()
	n := len(r.unreleased)
	r.mu.Unlock()
	if n == 0 {
		return false
	}
	if !r.flushing.CompareAndSwap(false, true) {
		return true
	}
	defer r.flushing.Store(false)
	r.mu.Lock()
	batch := r.unreleased
	r.unreleased = nil
	r.mu.Unlock()
	cmds := make(rueidis.Commands, len(batch))
	for i, l := range batch {
		cmds[i] = r.client.B().Zrem().Key(r.prefix + l.key).Member(l.member).Build()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.Timeout)
	defer cancel()
	for i, res := range r.client.DoMulti(ctx, cmds...) {
		if res.Error() != nil {
			r.remember(batch[i])
		}
	}
	return true
}

func (r *RedisCap) onError(err error) {
	if r.OnError != nil {
		r.OnError(err)
	}
}
