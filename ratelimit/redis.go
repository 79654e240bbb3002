package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// gcraScript decides one policy for one key in Redis, in one round trip:
// every budget of the policy is read, decided and (only if all admit)
// written together. Times are microseconds on the Redis server's clock
// (TIME), so replicas whose clocks disagree still share one budget; a
// non-zero ARGV[2] replaces it (tests only). The key holds the budgets'
// TATs as one string ("tat1 tat2 ...") and expires when its fullest budget
// would be full again: an idle key costs nothing. One GET and one SET keep
// the server's work per decision small.
//
// KEYS[1] the key. ARGV[1] n budgets, ARGV[2] now (0: TIME), then for each
// budget its interval and its tolerance (interval * burst), in µs.
// Returns {allowed, retry_us, reset_1, refused_1, ..., reset_n, refused_n}.
const gcraScript = `
local n = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local stored = redis.call('GET', KEYS[1])
local tats = {}
if stored then
  local i = 1
  for v in string.gmatch(stored, '%d+') do tats[i] = tonumber(v); i = i + 1 end
end
local allowed, retry = 1, 0
local out = {0, 0}
for i = 1, n do
  local interval = tonumber(ARGV[1 + 2 * i])
  local tolerance = tonumber(ARGV[2 + 2 * i])
  local tat = tats[i] or 0
  if tat < now then tat = now end
  tats[i] = tat
  local wait = tat + interval - now - tolerance
  local refused = 0
  if wait > 0 then
    allowed = 0
    refused = 1
    if wait > retry then retry = wait end
  end
  out[1 + 2 * i] = tat - now
  out[2 + 2 * i] = refused
end
out[1], out[2] = allowed, retry
if allowed == 1 then
  local ttl, parts = 0, {}
  for i = 1, n do
    local tat = tats[i] + tonumber(ARGV[1 + 2 * i])
    out[1 + 2 * i] = tat - now
    if tat - now > ttl then ttl = tat - now end
    parts[i] = string.format('%d', tat)
  end
  redis.call('SET', KEYS[1], table.concat(parts, ' '), 'PX', math.floor(ttl / 1000) + 1000)
end
return out
`

var script = rueidis.NewLuaScript(gcraScript)

// Redis decides a policy in Redis, shared by every replica that uses the
// same server and prefix. Create it with [NewRedis]; it is safe for
// concurrent use and holds no lock across a network call. rueidis
// pipelines concurrent calls on one connection automatically.
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
}

// NewRedis returns a limiter for p in Redis. prefix starts its keys, so
// several policies and deployments can share a server.
func NewRedis(client rueidis.Client, prefix string, p Policy) *Redis {
	if err := p.Validate(); err != nil {
		panic(err.Error())
	}
	r := &Redis{client: client, policy: p, g: newGCRA(p), prefix: prefix + p.Name + ":"}
	r.args = append(r.args, strconv.Itoa(len(p.Limits)), "0")
	for i := range p.Limits {
		us := max(r.g.interval[i]/1000, 1)
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
	args := r.args
	if r.Now != nil {
		args = append([]string(nil), r.args...)
		args[1] = strconv.FormatInt(now.UnixMicro(), 10)
	}
	r.requests.Add(1)
	res, err := script.Exec(ctx, r.client, []string{r.prefix + key}, args).ToArray()
	if err != nil {
		return Decision{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	if len(res) != 2+2*r.g.n {
		return Decision{}, errors.New("ratelimit: redis: unexpected reply")
	}
	num := func(i int) int64 { v, _ := res[i].AsInt64(); return v }
	d := Decision{Allowed: num(0) == 1, RetryAfter: time.Duration(num(1)) * time.Microsecond, N: r.g.n, g: &r.g, at: now.UnixNano()}
	for i := 0; i < r.g.n; i++ {
		d.States[i] = State{Reset: time.Duration(num(2+2*i)) * time.Microsecond, Refused: num(3+2*i) == 1}
	}
	if !d.Allowed {
		r.deny.put(key, now.UnixNano(), d)
	}
	return d, nil
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
	d.at = now
	d.RetryAfter -= elapsed
	for i := 0; i < d.N; i++ {
		d.States[i].Reset = max(d.States[i].Reset-elapsed, 0)
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
