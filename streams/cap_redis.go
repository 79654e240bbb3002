package streams

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// reserveScript takes a slot of one key in Redis, in one round trip. The
// key is a sorted set with one member per live stream, scored with the
// time its lease ends, in ms on the Redis server's clock (TIME), so
// replicas whose clocks disagree still share one cap. Members whose lease
// has ended are dropped first: they are the streams of a replica that
// died, or that could not refresh them in time. The set lives as long as
// its newest lease, so a key nobody streams on vanishes on its own.
//
// KEYS[1] the key's set. ARGV[1] max, ARGV[2] the lease in ms, ARGV[3]
// the new stream's member.
//
// Returns the live count with the new stream when it was admitted, and
// minus the live count when it was refused (max is at least 1, so a
// refusal is always negative).
const reserveScript = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[1]) then return -n end
redis.call('ZADD', KEYS[1], string.format('%d', now + ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n + 1
`

// refreshScript extends one stream's lease to a full lease from now, and
// the set's life with it. A member that is gone, or whose lease has ended
// already, is not brought back: another stream may have been counted in
// its place.
//
// KEYS[1] the key's set. ARGV[1] the lease in ms, ARGV[2] the stream's
// member. Returns 1 when the lease was extended, 0 when it had been lost.
const refreshScript = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local s = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not s or tonumber(s) <= now then return 0 end
redis.call('ZADD', KEYS[1], 'XX', string.format('%d', now + ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`

var (
	reserveLua = rueidis.NewLuaScript(reserveScript)
	refreshLua = rueidis.NewLuaScript(refreshScript)
)

// redisTimeout bounds each call a RedisCap makes to Redis, so a Redis
// that stalls delays a new stream by no more than this.
const redisTimeout = 100 * time.Millisecond

// ErrSlotLost is what Refresh returns when the slot's lease had ended in
// Redis before it was refreshed (refreshes came later than the lease, or
// Redis lost its data): the stream is no longer counted, and another may
// have taken its place. End the stream; the client's reconnection
// reserves a new slot.
var ErrSlotLost = errors.New("streams: the stream's slot expired in Redis before it was refreshed; end the stream, and its client's reconnection reserves a new one")

// RedisCap caps streams across every replica that uses the same Redis and
// prefix. Create it with [NewRedisCap]; it is safe for concurrent use.
//
// Each key is a sorted set in Redis, with one member per live stream: a
// random lease id, scored with the time its lease ends on the Redis
// server's clock. Reserve admits a stream while the key holds fewer than
// max unexpired leases; Release removes its lease; Refresh extends it to a
// full lease from now. A replica that dies never releases its slots, and
// they expire a lease after their last refresh. So refresh well within the
// lease: at a heartbeat a quarter of it, say, so a late beat or two lose
// nothing.
//
// When Redis fails, Reserve takes the slot from the fallback cap instead:
// each replica then caps its own streams, so a caller may hold up to
// replicas × max streams until Redis answers again. Streams that began
// during an outage stay counted on their replica's fallback, not in
// Redis, for their whole life. Each call to Redis gets Timeout.
type RedisCap struct {
	client   rueidis.Client
	prefix   string
	max      int
	maxArg   string // max, as the script reads it
	leaseArg string // the lease in ms, as the scripts read it
	fallback *MemoryCap

	// Timeout bounds each call to Redis, so a Redis that stalls delays a
	// new stream by no more than this: 100 ms from NewRedisCap. A call
	// that takes longer counts as Redis failing. Set it before the cap is
	// used.
	Timeout time.Duration

	// OnError, when set, is called with each failure of Redis that the
	// caller does not see: a Reserve the fallback served, a Release that
	// could not reach Redis (its lease then expires on its own). Use it
	// to log. It must not block.
	OnError func(error)
}

// NewRedisCap returns a cap of max streams per key in Redis. prefix
// starts its keys (<prefix>streams:<key>), so several deployments can
// share a server. lease is how long a slot outlives its last refresh.
// fallback serves Reserve while Redis fails; it is usually
// NewMemoryCap(max), and with a nil fallback Reserve returns Redis's error
// instead. It panics if max is less than 1 or lease less than 1 ms, as a
// misconfigured cap is a programming error caught at start-up.
func NewRedisCap(client rueidis.Client, prefix string, max int, lease time.Duration, fallback *MemoryCap) *RedisCap {
	if max < 1 {
		panic("streams: NewRedisCap needs a max of at least 1 stream per key")
	}
	if lease < time.Millisecond {
		panic("streams: NewRedisCap needs a lease of at least 1 ms")
	}
	ms := (lease + time.Millisecond - 1) / time.Millisecond // rounded up: never a shorter lease than asked
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

// Max is the most streams one key may hold open.
func (r *RedisCap) Max() int { return r.max }

// Reserve takes one of key's slots in Redis. When Redis fails it takes
// one from the fallback instead, calls OnError and returns a nil error;
// the slot then belongs to the fallback, and live is the fallback's
// count. It returns an error only when ctx ends first, or when Redis
// fails and there is no fallback.
//
// A Reserve that times out may still have been admitted by Redis; that
// slot is released by no one, and holds its place until its lease ends.
func (r *RedisCap) Reserve(ctx context.Context, key string) (s Slot, live int, ok bool, err error) {
	lease := rand.Text()
	cctx, cancel := context.WithTimeout(ctx, r.Timeout)
	n, err := reserveLua.Exec(cctx, r.client, []string{r.prefix + key}, []string{r.maxArg, r.leaseArg, lease}).AsInt64()
	cancel()
	switch {
	case err != nil && ctx.Err() != nil: // the caller giving up is not an outage
		return Slot{}, 0, false, fmt.Errorf("streams: redis: %w", ctx.Err())
	case err != nil && r.fallback == nil:
		return Slot{}, 0, false, fmt.Errorf("streams: redis: reserving a stream's slot: %w", err)
	case err != nil:
		r.onError(fmt.Errorf("streams: redis: reserving a stream's slot failed, so this replica's own cap served it: %w", err))
		return r.fallback.Reserve(ctx, key)
	case n < 0:
		return Slot{}, int(-n), false, nil
	}
	return Slot{owner: r, key: key, lease: lease}, int(n), true, nil
}

// refresh extends s's lease. It returns Redis's error, or ErrSlotLost when
// the lease had ended already.
func (r *RedisCap) refresh(ctx context.Context, s Slot) error {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	n, err := refreshLua.Exec(ctx, r.client, []string{r.prefix + s.key}, []string{r.leaseArg, s.lease}).AsInt64()
	if err != nil {
		return fmt.Errorf("streams: redis: refreshing a stream's slot (the stream keeps it until its lease ends; refresh again at the next heartbeat): %w", err)
	}
	if n == 0 {
		return ErrSlotLost
	}
	return nil
}

// release removes s's lease. Removing it twice removes nothing more, as
// no other stream has its member. When Redis fails the lease stays until
// it expires, and OnError is told.
func (r *RedisCap) release(s Slot) {
	ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
	defer cancel()
	err := r.client.Do(ctx, r.client.B().Zrem().Key(r.prefix+s.key).Member(s.lease).Build()).Error()
	if err != nil {
		r.onError(fmt.Errorf("streams: redis: releasing a stream's slot failed; it expires at the end of its lease: %w", err))
	}
}

func (r *RedisCap) onError(err error) {
	if r.OnError != nil {
		r.OnError(err)
	}
}
