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

// refreshScript keeps one stream counted for a full lease from now, and
// the set alive as long. A stream whose lease is still in the set has it
// extended. One whose lease is gone — it expired while Redis could not be
// reached, or the stream was admitted by a replica's fallback during an
// outage and was never in Redis — takes a place again if the key has one,
// as Reserve would: so once Redis is back every stream a replica holds is
// counted in it, and a key a cut left above its cap (each replica admitted
// on its own) comes back to it, the streams that find no place ending.
//
// KEYS[1] the key's set. ARGV[1] max, ARGV[2] the lease in ms, ARGV[3]
// the stream's member. Returns 1 when the stream is counted, 0 when its
// key had no place for it.
const refreshScript = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local s = redis.call('ZSCORE', KEYS[1], ARGV[3])
if not s or tonumber(s) <= now then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
end
redis.call('ZADD', KEYS[1], string.format('%d', now + ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`

var (
	reserveLua = rueidis.NewLuaScript(reserveScript)
	refreshLua = rueidis.NewLuaScript(refreshScript)
)

// redisTimeout bounds each call a RedisCap makes to Redis, so a Redis
// that stalls delays a new stream by no more than this.
const redisTimeout = 100 * time.Millisecond

// errSlotLost is what Refresh returns when the slot's lease had ended in
// Redis (refreshes came later than the lease, Redis lost its data, or the
// slot was taken from the fallback during an outage) and its key has no
// place left for it: other streams were counted meanwhile. End the
// stream; its client's reconnection reserves a new slot.
var errSlotLost = errors.New("streams: the stream's slot is no longer counted in Redis and its key is full; end the stream, and its client's reconnection reserves a new one")

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
// With a fallback, every stream this replica holds is also counted in it,
// whether Redis or the fallback admitted it. So a key that holds max
// streams on this replica is refused without a call to Redis, and when
// Redis fails, Reserve admits from that count: a key never holds more
// than max streams on one replica, though it may hold up to replicas ×
// max across the cluster until Redis answers again. Once it does, the
// counts reconcile at each stream's next Refresh: a stream admitted during
// the outage takes a lease (or, when the cluster holds max streams of its
// key already, errSlotLost ends it), one whose lease expired meanwhile
// takes it back the same way, and the leases whose Release failed are
// removed then (up to maxUnreleased of them are remembered; the others
// expire with their leases). Each call to Redis gets Timeout.
type RedisCap struct {
	client   rueidis.Client
	prefix   string
	max      int
	maxArg   string // max, as the scripts read it
	leaseArg string // the lease in ms, as the scripts read it
	fallback *MemoryCap

	// unreleased are leases whose Release could not reach Redis, to be
	// removed once it answers; flushing says a call is removing them.
	mu         sync.Mutex
	unreleased []lease
	flushing   atomic.Bool

	// Timeout bounds each call to Redis, so a Redis that stalls delays a
	// new stream by no more than this: 100 ms from NewRedisCap. A call
	// that takes longer counts as Redis failing. Set it before the cap is
	// used.
	Timeout time.Duration

	// OnError, when set, is called with each failure of Redis that the
	// caller does not see: a Reserve the fallback served, a Release that
	// could not reach Redis. Use it to log. It must not block.
	OnError func(error)
}

// A lease is one stream's member in its key's set.
type lease struct{ key, member string }

// maxUnreleased bounds the leases a RedisCap remembers to remove once
// Redis is back; the ones past it expire with their leases.
const maxUnreleased = 10000

// NewRedisCap returns a cap of max streams per key in Redis. prefix
// starts its keys (<prefix>streams:<key>), so several deployments can
// share a server. lease is how long a slot outlives its last refresh.
// fallback, NewMemoryCap(max), counts this replica's streams and serves
// Reserve while Redis fails; with a nil fallback Reserve returns Redis's
// error instead. It panics if max is less than 1, lease less than 1 ms, or
// the fallback's max is not max, as a misconfigured cap is a programming
// error caught at start-up.
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
func (r *RedisCap) capacity() int { return r.max }

// Reserve takes one of key's slots in Redis. When this replica holds max
// streams of key already, it refuses without asking Redis. When Redis
// fails, it admits from this replica's count instead (the fallback's),
// calls OnError and returns a nil error; live is then that count. It
// returns an error only when ctx ends first, or when Redis fails and there
// is no fallback.
//
// A Reserve that times out may still have been admitted by Redis; the
// slot it returns holds the same lease, which its Refresh and Release
// then find.
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
	cctx, cancel := context.WithTimeout(ctx, r.Timeout)
	n, err := reserveLua.Exec(cctx, r.client, []string{r.prefix + key}, []string{r.maxArg, r.leaseArg, s.lease}).AsInt64()
	cancel()
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

// refresh keeps s counted in Redis (refreshScript). It returns Redis's
// error, or errSlotLost when s's key had no place for it, even once the
// leases whose Release failed were removed.
func (r *RedisCap) refreshSlot(ctx context.Context, s capSlot) error {
	n, err := r.keep(ctx, s)
	if err == nil && r.flush(ctx) && n == 0 {
		n, err = r.keep(ctx, s) // the leases of streams that ended may have filled its key
	}
	if err != nil {
		return fmt.Errorf("streams: redis: refreshing a stream's slot (the stream keeps it until its lease ends; refresh again at the next heartbeat): %w", err)
	}
	if n == 0 {
		return errSlotLost
	}
	return nil
}

// keep runs refreshScript for s.
func (r *RedisCap) keep(ctx context.Context, s capSlot) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	return refreshLua.Exec(ctx, r.client, []string{r.prefix + s.key}, []string{r.maxArg, r.leaseArg, s.lease}).AsInt64()
}

// release removes s's lease, and its place in this replica's count.
// Removing it twice removes nothing more, as no other stream has its
// member. When Redis fails, the lease is remembered and removed once Redis
// answers again, and OnError is told.
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

// releaseLocal gives back s's place in this replica's count.
func (r *RedisCap) releaseLocal(s capSlot) {
	if r.fallback != nil && s.id != 0 {
		r.fallback.releaseSlot(s)
	}
}

// remember keeps l to remove once Redis answers, unless maxUnreleased
// are kept already: then l expires with its lease.
func (r *RedisCap) remember(l lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.unreleased) < maxUnreleased {
		r.unreleased = append(r.unreleased, l)
	}
}

// flush removes the leases whose Release failed, now that Redis has
// answered a call: in one round trip, by one caller at a time. Those it
// cannot remove (the first call on a connection an outage broke may fail)
// are kept for the next. It reports whether there were any, being
// removed by this call or another.
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
