package ratelimit

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// gcraScript decides one budget for a batch of keys, in µs on the server's
// clock (or ARGV[1]'s). A key holds its rates' TATs as doubles and expires
// when full. ARGV[2] is a new key's PX in ms, then each rate's interval and
// tolerance. Returns per key and rate the µs until full, -1 minus that
// when refused; one number comes bare.
const gcraScript = `
local now = ARGV[1]
if now == '0' then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
else
  now = tonumber(now)
end
local n = (#ARGV - 2) / 2
local out = {}
if n == 1 then
  -- one rate (most budgets): no tables per key
  local iv = tonumber(ARGV[3])
  local new = struct.pack('<d', now + iv)
  for k = 1, #KEYS do
    local reset = iv -- a new key: one token taken from a full bucket
    local v = redis.call('SET', KEYS[k], new, 'NX', 'GET', 'PX', ARGV[2])
    if v then -- the key exists and was left as it was: decide from its TAT
      reset = 0
      if #v == 8 then reset = math.max(struct.unpack('<d', v) - now, 0) end
      if reset + iv > tonumber(ARGV[4]) then -- refused: nothing is written
        reset = -1 - reset
      else
        reset = reset + iv
        redis.call('SET', KEYS[k], struct.pack('<d', now + reset), 'PX', math.ceil(reset / 1000) + 1)
      end
    end
    out[k] = reset
  end
else
  local fmt = '<' .. string.rep('d', n)
  local interval, tolerance, new = {}, {}, {}
  for i = 1, n do
    interval[i] = tonumber(ARGV[1 + 2 * i])
    tolerance[i] = tonumber(ARGV[2 + 2 * i])
    new[i] = now + interval[i]
  end
  new = struct.pack(fmt, unpack(new))
  local o = 0
  for k = 1, #KEYS do
    local v = redis.call('SET', KEYS[k], new, 'NX', 'GET', 'PX', ARGV[2])
    if not v then -- a new key, as above
      for i = 1, n do out[o + i] = interval[i] end
    else -- every rate decided; only if all admit, all are written
      local tats = {}
      if #v == 8 * n then tats = {struct.unpack(fmt, v)} end
      local allowed = true
      for i = 1, n do
        local reset = math.max((tats[i] or now) - now, 0)
        if reset + interval[i] > tolerance[i] then allowed = false end
        out[o + i] = reset
      end
      local ttl = 0
      for i = 1, n do
        if allowed then
          out[o + i] = out[o + i] + interval[i]
          tats[i] = now + out[o + i]
          ttl = math.max(ttl, out[o + i])
        else
          out[o + i] = -1 - out[o + i]
        end
      end
      if allowed then
        redis.call('SET', KEYS[k], struct.pack(fmt, unpack(tats, 1, n)), 'PX', math.ceil(ttl / 1000) + 1)
      end
    end
    o = o + n
  end
end
if #out == 1 then return out[1] end
return out
`

// refundScript moves each rate's TAT of KEYS[1] back one interval.
const refundScript = `
local v = redis.call('GET', KEYS[1])
local n = (#ARGV - 2) / 2
if not v or #v ~= 8 * n then return 0 end
local fmt = '<' .. string.rep('d', n)
local tats = {struct.unpack(fmt, v)}
for i = 1, n do tats[i] = tats[i] - tonumber(ARGV[1 + 2 * i]) end
redis.call('SET', KEYS[1], struct.pack(fmt, unpack(tats, 1, n)), 'KEEPTTL')
return 1
`

var (
	refundLua  = rueidis.NewLuaScript(refundScript)
	script     = rueidis.NewLuaScript(gcraScript)
	scriptSHA1 = func() string { h := sha1.Sum([]byte(gcraScript)); return hex.EncodeToString(h[:]) }()
)

// Redis decides a budget in Redis, shared by every replica on the same
// server and prefix, batching concurrent decisions into one script call.
// A deny cache answers for a refused key until its Retry-After has passed.
type Redis struct {
	client              rueidis.Client
	cluster             bool // a batch goes as one call per hash slot
	budget              Budget
	g                   gcra
	prefix              string
	args                []string         // the script's ARGV
	interval, tolerance [MaxLimits]int64 // in µs
	Now                 func() time.Time // when set, the decisions' clock (tests)

	deny     denyCache
	hits     atomic.Int64
	requests atomic.Int64

	mu      sync.Mutex
	pending []*call
	flights int
}

const (
	maxFlights = 4
	maxBatch   = 128
)

type call struct {
	key      string
	now      int64
	deadline time.Time
	d        Decision
	err      error
	done     chan struct{}
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// NewRedis returns a limiter for b in Redis, its keys under prefix.
func NewRedis(client rueidis.Client, prefix string, b Budget) *Redis {
	if err := b.Validate(); err != nil {
		panic(err.Error())
	}
	r := &Redis{client: client, budget: b, g: newGCRA(b), prefix: prefix + b.Name + ":",
		cluster: client.Mode() == rueidis.ClientModeCluster}
	var newTTL int64 // ms: a new key lives the longest interval
	for i := range b.Limits {
		us := max((r.g.interval[i]+999)/1000, 1) // rounded up: never a faster rate than configured
		r.interval[i], r.tolerance[i] = us, us*int64(b.Limits[i].Burst)
		// Tokens left come from the script's µs (3/s is no whole number of µs).
		r.g.interval[i], r.g.tolerance[i] = us*1000, r.tolerance[i]*1000
		newTTL = max(newTTL, (us+999)/1000+1)
	}
	r.args = append(r.args, "0", strconv.FormatInt(newTTL, 10))
	for i := range b.Limits {
		r.args = append(r.args, strconv.FormatInt(r.interval[i], 10), strconv.FormatInt(r.tolerance[i], 10))
	}
	r.deny = denyCache{seed: maphash.MakeSeed(), m: map[uint64]denied{}}
	return r
}

// CheckRedis makes one decision under prefix, to find at start-up a server
// that cannot run the limiter's script.
func CheckRedis(ctx context.Context, client rueidis.Client, prefix string) error {
	probe := NewRedis(client, prefix, Budget{Name: "startup-check", Limits: []Limit{{Name: "check", Rate: Rate{Limit: 1000, Window: time.Second, Burst: 1000}}}})
	if _, err := probe.Allow(ctx, "probe"); err != nil {
		return fmt.Errorf("ratelimit: this Redis cannot run the limiter's script (it needs Redis 7.0 or later, with Lua scripting allowed): %w", err)
	}
	return nil
}

// Budget returns the budget r decides.
func (r *Redis) Budget() Budget { return r.budget }

// Allow decides a request for key.
func (r *Redis) Allow(ctx context.Context, key string) (Decision, error) {
	wall := time.Now()
	now := wall
	if r.Now != nil {
		now = r.Now()
	}
	if d, ok := r.deny.get(key, now.UnixNano()); ok {
		r.hits.Add(1)
		d.g = &r.g
		r.refusal(&d) // a rate may have recovered since
		return d, nil
	}
	if parent := trace.SpanFromContext(ctx); parent.IsRecording() { // the round trip, in a traced request
		_, span := parent.TracerProvider().Tracer("ratelimit").Start(ctx, "redis rate limit",
			trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attribute.String("db.system.name", "redis")))
		defer span.End()
	}
	c := callPool.Get().(*call)
	c.key, c.now, c.err = key, now.UnixNano(), nil
	c.deadline = wall.Add(time.Second)
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
		// The batch may still take a token; the call is not reused.
		return Decision{}, fmt.Errorf("ratelimit: redis: %w", ctx.Err())
	}
	d, err := c.d, c.err
	callPool.Put(c)
	if err == nil && !d.Allowed {
		r.deny.put(key, now.UnixNano(), d)
	}
	return d, err
}

// Refund gives back the token d, an admitted decision for key, took.
func (r *Redis) Refund(ctx context.Context, key string, d *Decision) error {
	if err := refundLua.Exec(ctx, r.client, []string{r.prefix + key}, r.args).Error(); err != nil {
		return fmt.Errorf("ratelimit: redis: %w", err)
	}
	d.refund()
	return nil
}

// lead flushes the pending calls in batches until its own (mine) is
// decided, then hands the rest to a goroutine.
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
		} else { // as long as the most patient caller waits
			deadline := batch[0].deadline
			for _, c := range batch {
				if c.deadline.After(deadline) {
					deadline = c.deadline
				}
			}
			bctx, cancel := context.WithDeadline(context.Background(), deadline)
			r.decide(bctx, batch)
			cancel()
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

func (r *Redis) decide(ctx context.Context, batch []*call) {
	keys := make([]string, len(batch))
	for i, c := range batch {
		keys[i] = r.prefix + c.key
	}
	args := r.args
	if r.Now != nil { // a test clock: the batch is decided at its first caller's time
		args = append([]string(nil), r.args...)
		args[0] = strconv.FormatInt(batch[0].now/1000, 10)
	}
	r.requests.Add(int64(len(batch)))
	n := r.g.n
	var buf [MaxLimits]int64
	nums := buf[:]
	if len(batch) > 1 {
		nums = make([]int64, len(batch)*n)
	}
	var err error
	var errs []error // per key, on a cluster
	if r.cluster && len(batch) > 1 {
		errs = r.runSlots(ctx, keys, args, nums[:len(batch)*n])
	} else {
		err = read(script.Exec(ctx, r.client, keys, args), nums[:len(batch)*n])
	}
	for i, c := range batch {
		if errs != nil {
			err = errs[i]
		}
		if err != nil {
			c.err = fmt.Errorf("ratelimit: redis: %w", err)
		} else {
			c.d = r.decision(nums[i*n:(i+1)*n], c.now)
		}
		c.done <- struct{}{}
	}
}

// runSlots decides a batch on a Redis Cluster with one script call per
// hash slot, all sent at once, and returns each key's error.
func (r *Redis) runSlots(ctx context.Context, keys, args []string, nums []int64) []error {
	n := r.g.n
	slots := map[uint16][]int{} // slot: the indexes of its keys
	var order []uint16
	for i, k := range keys {
		cmd := r.client.B().Get().Key(k).Build() // rueidis knows the slot
		s := cmd.Slot()
		if slots[s] == nil {
			order = append(order, s)
		}
		slots[s] = append(slots[s], i)
	}
	cmds := make(rueidis.Commands, len(order))
	group := make([][]string, len(order))
	for g, s := range order {
		for _, i := range slots[s] {
			group[g] = append(group[g], keys[i])
		}
		cmds[g] = r.client.B().Evalsha().Sha1(scriptSHA1).Numkeys(int64(len(group[g]))).Key(group[g]...).Arg(args...).Build()
	}
	errs := make([]error, len(keys))
	part := make([]int64, len(keys)*n)
	for g, resp := range r.client.DoMulti(ctx, cmds...) {
		if e, ok := rueidis.IsRedisErr(resp.Error()); ok && e.IsNoScript() { // a node that has not seen it yet
			resp = script.Exec(ctx, r.client, group[g], args)
		}
		idx := slots[order[g]]
		err := read(resp, part[:len(idx)*n])
		for j, i := range idx {
			errs[i] = err
			copy(nums[i*n:(i+1)*n], part[j*n:(j+1)*n])
		}
	}
	return errs
}

func read(resp rueidis.RedisResult, nums []int64) error {
	if len(nums) == 1 { // one number comes bare
		v, err := resp.AsInt64()
		nums[0] = v
		return err
	}
	msgs, err := resp.ToArray()
	if err == nil && len(msgs) != len(nums) {
		err = errors.New("unexpected reply")
	}
	for i := range msgs {
		if err != nil {
			break
		}
		nums[i], err = msgs[i].AsInt64()
	}
	return err
}

func (r *Redis) decision(nums []int64, at int64) Decision {
	d := Decision{Allowed: nums[0] >= 0, N: uint8(r.g.n), g: &r.g, at: at}
	for i, v := range nums {
		if !d.Allowed {
			v = -1 - v
		}
		d.resets[i] = time.Duration(v) * time.Microsecond
	}
	if !d.Allowed {
		r.refusal(&d)
	}
	return d
}

// refusal sets which rates of refused d refuse, and its Retry-After.
func (r *Redis) refusal(d *Decision) {
	d.refused, d.RetryAfter = 0, 0
	for i := range int(d.N) {
		if wait := time.Duration(r.interval[i]-r.tolerance[i])*time.Microsecond + d.resets[i]; wait > 0 {
			d.refused |= 1 << i
			d.RetryAfter = max(d.RetryAfter, wait)
		}
	}
}

// Stats reports the decisions that asked Redis and the deny cache's.
func (r *Redis) Stats() (requests, denyCacheHits int64) { return r.requests.Load(), r.hits.Load() }

// denyCache remembers refusals until they end; when full it drops them.
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
	d, elapsed := e.d, time.Duration(now-e.at)
	d.at, d.local = now, true
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
