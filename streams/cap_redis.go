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

// capScript counts stream ARGV[3] in KEYS[1], a sorted set of live streams
// scored by lease end on Redis's clock: a live lease is extended for
// ARGV[2] ms; a new or expired one first drops expired members and takes a
// place only below max ARGV[1]. Returns the live count, negated on refusal.
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

const redisTimeout = 100 * time.Millisecond

// errSlotLost ends a stream whose lease had ended in Redis and whose key is full.
var errSlotLost = errors.New("streams: the stream's slot is no longer counted in Redis and its key is full")

// RedisCap caps streams across every replica on the same Redis and prefix.
// Each stream holds a lease, refreshed at each heartbeat, so a dead
// replica's slots expire. A fallback counts this replica's streams too and
// admits while Redis fails (up to replicas × max a key until it answers).
type RedisCap struct {
	client   rueidis.Client
	prefix   string
	max      int
	maxArg   string // max, as the script reads it
	leaseArg string // the lease in ms
	fallback *MemoryCap

	mu         sync.Mutex
	unreleased []lease // whose release failed, removed once Redis answers
	flushing   atomic.Bool

	// Timeout bounds each call to Redis (100 ms); set it before use.
	Timeout time.Duration
	// OnError, when set, is told each failure the caller does not see (a
	// reserve the fallback served, a failed release). It must not block.
	OnError func(error)
}

type lease struct{ key, member string }

const maxUnreleased = 10000 // past it, failed releases just expire

// NewRedisCap returns a cap of max streams per key, at "<prefix>streams:<key>";
// a slot outlives its last refresh by lease. fallback is NewMemoryCap(max)
// or nil. It panics if max < 1, lease < 1 ms or the fallback's max differs.
func NewRedisCap(client rueidis.Client, prefix string, max int, lease time.Duration, fallback *MemoryCap) *RedisCap {
	if max < 1 || lease < time.Millisecond || (fallback != nil && fallback.capacity() != max) {
		panic("streams: NewRedisCap needs a max of at least 1 stream per key, a lease of at least 1 ms, " +
			"and a fallback of the same max (it counts the same streams)")
	}
	ms := (lease + time.Millisecond - 1) / time.Millisecond // rounded up
	return &RedisCap{client: client, prefix: prefix + "streams:", max: max, maxArg: strconv.Itoa(max),
		leaseArg: strconv.FormatInt(int64(ms), 10), fallback: fallback, Timeout: redisTimeout}
}

func (r *RedisCap) capacity() int { return r.max }

// reserve takes one of key's slots in Redis; when Redis fails, the
// fallback admits and OnError is told. It errs only when ctx ends first,
// or Redis fails without a fallback.
func (r *RedisCap) reserve(ctx context.Context, key string) (s capSlot, live int, ok bool, err error) {
	s = capSlot{owner: r, key: key, lease: rand.Text()}
	local := 0
	if r.fallback != nil {
		var mine capSlot
		if mine, local, ok, _ = r.fallback.reserve(ctx, key); !ok {
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

// refreshSlot keeps s counted in Redis, or returns errSlotLost when its key
// had no place for it, even once the failed releases were flushed.
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

func (r *RedisCap) count(ctx context.Context, s capSlot) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	return capLua.Exec(ctx, r.client, []string{r.prefix + s.key}, []string{r.maxArg, r.leaseArg, s.lease}).AsInt64()
}

// releaseSlot removes s's lease (once Redis answers) and its local place.
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

// flush removes the leases whose release failed, one caller at a time,
// and reports whether there were any.
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
