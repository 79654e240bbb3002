package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// gcraScript decides one policy for a batch of keys in Redis, in one round
// trip: for each key every budget of the policy is read, decided and (only
// if all admit) written together. Concurrent decisions of one replica are
// batched into one call (see Redis.Allow), so the script's fixed cost is
// paid once per batch, not once per decision. Times are microseconds on
// the Redis server's clock (TIME), so replicas whose clocks disagree still
// share one budget; a non-zero ARGV[2] replaces it (tests only). A key
// holds its budgets' TATs packed as little-endian doubles (exact for
// microsecond times), read and written by Redis's struct library without
// any string formatting (a value of another length, such as one an older
// brain wrote, counts as a full bucket), and expires when its fullest budget would be full
// again: an idle key costs nothing.
//
// KEYS the keys. ARGV[1] n budgets, ARGV[2] now (0: TIME), then for each
// budget its interval and its tolerance (interval * burst), in µs.
// Returns, per key: allowed, retry_us, then reset_i, refused_i per budget.
const gcraScript = `
local n = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
if now == 0 then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
local out = {}
if n == 1 then
  -- One budget (most policies): no tables per key, nothing to format.
  local iv, tol = tonumber(ARGV[3]), tonumber(ARGV[4])
  for k = 1, #KEYS do
    local v = redis.call('GET', KEYS[k])
    local tat = now
    if v and #v == 8 then
      tat = struct.unpack('<d', v)
      if tat < now then tat = now end
    end
    local o = 4 * k - 4
    local wait = tat + iv - now - tol
    if wait > 0 then
      out[o + 1], out[o + 2], out[o + 3], out[o + 4] = 0, wait, tat - now, 1
    else
      tat = tat + iv
      out[o + 1], out[o + 2], out[o + 3], out[o + 4] = 1, 0, tat - now, 0
      redis.call('SET', KEYS[k], struct.pack('<d', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
    end
  end
  return out
end
local fmt = '<' .. string.rep('d', n)
local interval, tolerance = {}, {}
for i = 1, n do
  interval[i] = tonumber(ARGV[1 + 2 * i])
  tolerance[i] = tonumber(ARGV[2 + 2 * i])
end
local o = 0
for k = 1, #KEYS do
  local v = redis.call('GET', KEYS[k])
  local tats = {}
  if v and #v == 8 * n then tats = {struct.unpack(fmt, v)} end
  local allowed, retry = 1, 0
  local base = o
  o = o + 2
  for i = 1, n do
    local tat = tats[i] or 0
    if tat < now then tat = now end
    tats[i] = tat
    local wait = tat + interval[i] - now - tolerance[i]
    local refused = 0
    if wait > 0 then
      allowed = 0
      refused = 1
      if wait > retry then retry = wait end
    end
    out[o + 1] = tat - now
    out[o + 2] = refused
    o = o + 2
  end
  out[base + 1], out[base + 2] = allowed, retry
  if allowed == 1 then
    local ttl = 0
    for i = 1, n do
      local tat = tats[i] + interval[i]
      tats[i] = tat
      out[base + 1 + 2 * i] = tat - now
      if tat - now > ttl then ttl = tat - now end
    end
    redis.call('SET', KEYS[k], struct.pack(fmt, unpack(tats, 1, n)), 'PX', math.floor(ttl / 1000) + 1000)
  end
end
return out
`

var script = rueidis.NewLuaScript(gcraScript)

// Redis decides a policy in Redis, shared by every replica that uses the
// same server and prefix. Create it with [NewRedis]; it is safe for
// concurrent use and holds no lock across a network call. Decisions that
// arrive while others are in Redis wait for the next batch: one script
// call decides up to 128 of them, and at most 4 batches are in flight, so
// the script's fixed cost is paid per batch. A lone caller's decision goes
// at once, in a batch of one.
//
// Its deny cache answers locally, without asking Redis, for a key that
// Redis refused until the refusal's Retry-After has passed: a flood on one
// key costs Redis about one call per retry window per replica. A denial is
// decided with the Redis clock and replayed with this one; skew between
// them shifts only when this replica starts asking again.
type Redis struct {
	client rueidis.Client
	policy Policy
	g      gcra
	prefix string
	args   []string // n, now, interval and tolerance per budget (µs)
	// Now, when set, is sent as the time of each decision instead of the
	// server's clock. For tests.
	Now func() time.Time

	deny     denyCache
	hits     atomic.Int64
	requests atomic.Int64

	// Batching: callers queue in pending; at most maxFlights batches are
	// in Redis at once, and whatever queued meanwhile goes in the next.
	mu      sync.Mutex
	pending []*call
	flights int
}

// maxFlights bounds the batches one limiter has in Redis at once; maxBatch
// the decisions in one batch.
const (
	maxFlights = 4
	maxBatch   = 128
)

// A call is one decision waiting for its batch.
type call struct {
	key      string
	now      int64
	deadline time.Time
	d        Decision
	err      error
	done     chan struct{}
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// NewRedis returns a limiter for p in Redis. prefix starts its keys, so
// several policies and deployments can share a server.
func NewRedis(client rueidis.Client, prefix string, p Policy) *Redis {
	if err := p.Validate(); err != nil {
		panic(err.Error())
	}
	r := &Redis{client: client, policy: p, g: newGCRA(p), prefix: prefix + p.Name + ":"}
	r.args = append(r.args, strconv.Itoa(len(p.Limits)), "0")
	for i := range p.Limits {
		us := max((r.g.interval[i]+999)/1000, 1) // rounded up: never a faster rate than configured
		r.args = append(r.args, strconv.FormatInt(us, 10), strconv.FormatInt(us*int64(p.Limits[i].Burst), 10))
	}
	r.deny.init()
	return r
}

// Policy returns the policy r decides.
func (r *Redis) Policy() Policy { return r.policy }

// Allow decides a request for key: from the deny cache while a refusal
// lasts, else in Redis.
func (r *Redis) Allow(ctx context.Context, key string) (Decision, error) {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	if d, ok := r.deny.get(key, now.UnixNano()); ok {
		r.hits.Add(1)
		d.g = &r.g
		return d, nil
	}
	c := callPool.Get().(*call)
	c.key, c.now, c.err = key, now.UnixNano(), nil
	c.deadline = time.Now().Add(time.Second)
	if dl, ok := ctx.Deadline(); ok {
		c.deadline = dl
	}
	r.mu.Lock()
	r.pending = append(r.pending, c)
	lead := r.flights < maxFlights
	if lead {
		r.flights++
	}
	r.mu.Unlock()
	if lead {
		r.lead(ctx, c)
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		// The batch may still decide (and take a token) in Redis; this
		// caller no longer waits for it. Its call is not reused.
		return Decision{}, fmt.Errorf("ratelimit: redis: %w", ctx.Err())
	}
	d, err := c.d, c.err
	callPool.Put(c)
	if err == nil && !d.Allowed {
		r.deny.put(key, now.UnixNano(), d)
	}
	return d, err
}

// lead flushes the pending calls in batches. Once its own call (mine) is
// decided it hands what is left to a goroutine and returns, so leading
// never adds the others' waits to its own. No lock is held while a batch
// is in Redis.
func (r *Redis) lead(ctx context.Context, mine *call) {
	for {
		r.mu.Lock()
		batch := r.pending
		if len(batch) > maxBatch {
			batch, r.pending = batch[:maxBatch:maxBatch], batch[maxBatch:]
		} else {
			r.pending = nil
		}
		if len(batch) == 0 {
			r.flights--
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		if len(batch) == 1 && batch[0] == mine {
			r.decide(ctx, batch) // alone: the caller's own context serves
		} else {
			r.flush(batch)
		}
		if mine != nil && slices.Contains(batch, mine) {
			r.mu.Lock()
			idle := len(r.pending) == 0
			if idle {
				r.flights--
			}
			r.mu.Unlock()
			if !idle {
				go r.lead(context.Background(), nil)
			}
			return
		}
	}
}

// flush decides a batch for several callers: the call may take as long as
// the most patient of them would wait (1 s for callers without a
// deadline), so a stalled Redis cannot hold a flight for longer, and no
// caller's cancellation fails the others' decisions.
func (r *Redis) flush(batch []*call) {
	var deadline time.Time
	for _, c := range batch {
		if c.deadline.After(deadline) {
			deadline = c.deadline
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	r.decide(ctx, batch)
}

// decide runs one script call for a batch and wakes its callers.
func (r *Redis) decide(ctx context.Context, batch []*call) {
	keys := make([]string, len(batch))
	for i, c := range batch {
		keys[i] = r.prefix + c.key
	}
	args := r.args
	if r.Now != nil { // a test clock: the batch is decided at its first caller's time
		args = append([]string(nil), r.args...)
		args[1] = strconv.FormatInt(batch[0].now/1000, 10)
	}
	r.requests.Add(int64(len(batch)))
	res, err := script.Exec(ctx, r.client, keys, args).ToArray()
	stride := 2 + 2*r.g.n
	if err == nil && len(res) != stride*len(batch) {
		err = errors.New("unexpected reply")
	}
	for i, c := range batch {
		if err != nil {
			c.err = fmt.Errorf("ratelimit: redis: %w", err)
		} else {
			m := res[i*stride : (i+1)*stride]
			num := func(j int) int64 { v, _ := m[j].AsInt64(); return v }
			c.d = Decision{Allowed: num(0) == 1, RetryAfter: time.Duration(num(1)) * time.Microsecond, N: uint8(r.g.n), g: &r.g, at: c.now}
			for j := 0; j < r.g.n; j++ {
				c.d.resets[j] = time.Duration(num(2+2*j)) * time.Microsecond
				if num(3+2*j) == 1 {
					c.d.refused |= 1 << j
				}
			}
		}
		c.done <- struct{}{}
	}
}

// Stats reports how many decisions asked Redis and how many the deny cache
// answered instead.
func (r *Redis) Stats() (requests, denyCacheHits int64) { return r.requests.Load(), r.hits.Load() }

// denyCache remembers refusals until they end. It is bounded: when full,
// it drops what has ended, and if that is not enough, everything (a full
// cache only costs Redis calls, never correctness).
type denyCache struct {
	seed maphash.Seed
	mu   sync.Mutex
	m    map[uint64]denied
}

type denied struct {
	at, until int64 // Unix ns
	d         Decision
}

const denyCacheMax = 100_000

func (c *denyCache) init() {
	c.seed = maphash.MakeSeed()
	c.m = map[uint64]denied{}
}

func (c *denyCache) get(key string, now int64) (Decision, bool) {
	h := maphash.String(c.seed, key)
	c.mu.Lock()
	e, ok := c.m[h]
	if ok && now >= e.until {
		delete(c.m, h)
		ok = false
	}
	c.mu.Unlock()
	if !ok {
		return Decision{}, false
	}
	// Replay the refusal as of now: the waits have shrunk by the time since.
	d, elapsed := e.d, time.Duration(now-e.at)
	d.at, d.local = now, true
	d.RetryAfter -= elapsed
	for i := 0; i < int(d.N); i++ {
		d.resets[i] = max(d.resets[i]-elapsed, 0)
	}
	return d, true
}

func (c *denyCache) put(key string, now int64, d Decision) {
	h := maphash.String(c.seed, key)
	c.mu.Lock()
	if len(c.m) >= denyCacheMax {
		for k, e := range c.m {
			if now >= e.until {
				delete(c.m, k)
			}
		}
		if len(c.m) >= denyCacheMax {
			clear(c.m)
		}
	}
	d.g = nil
	c.m[h] = denied{at: now, until: now + int64(d.RetryAfter), d: d}
	c.mu.Unlock()
}
