package auth

import (
	"context"
	"crypto/rand"
	"strconv"
	"time"

	"github.com/brain-template/brain/ratelimit"
	"github.com/redis/rueidis"
)

// beginScript is LoginThrottle's rule for one count KEYS[1], a hash of n
// (failures), last (the latest's time) and a begin time per attempt in
// flight, in µs on the server's clock (or ARGV[1]'s). ARGV: 2 threshold,
// 3 base delay, 4 max delay, 5 forget after, 6 max in flight, 7 TTL ms,
// 8 the attempt's id ("" only checks). Returns {µs to wait, failures}.
const beginScript = `
local now = tonumber(ARGV[1])
if now == 0 then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
local n, last, pending, begun = 0, 0, 0, 0
local h = redis.call('HGETALL', KEYS[1])
for i = 1, #h, 2 do
  local v = tonumber(h[i + 1])
  if h[i] == 'n' then n = v
  elseif h[i] == 'last' then last = v
  elseif v <= now - tonumber(ARGV[6]) then redis.call('HDEL', KEYS[1], h[i])
  else pending, begun = pending + 1, math.max(begun, v) end
end
if pending == 0 and now - last >= tonumber(ARGV[5]) then
  if n > 0 then redis.call('DEL', KEYS[1]) end
  n = 0
end
local wait, threshold = 0, tonumber(ARGV[2])
if n + pending >= threshold then
  local d, shift = tonumber(ARGV[4]), n + pending - threshold
  if shift < 30 then d = math.min(tonumber(ARGV[3]) * 2 ^ shift, d) end
  wait = math.max(last, begun) + d - now
end
if wait <= 0 and ARGV[8] ~= '' then
  redis.call('HSET', KEYS[1], ARGV[8], string.format('%d', now))
  redis.call('PEXPIRE', KEYS[1], ARGV[7])
end
return {math.max(wait, 0), n}
`

// settleScript ends attempt ARGV[1] in count KEYS[1] as ARGV[2] says
// (fail, reset or drop); ARGV[3] is the hash's TTL in ms.
const settleScript = `
local at = redis.call('HGET', KEYS[1], ARGV[1])
if not at then return 0 end
if ARGV[2] == 'reset' then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('HDEL', KEYS[1], ARGV[1])
if ARGV[2] == 'fail' then
  redis.call('HINCRBY', KEYS[1], 'n', 1)
  if tonumber(at) > (tonumber(redis.call('HGET', KEYS[1], 'last')) or 0) then
    redis.call('HSET', KEYS[1], 'last', at)
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
`

var (
	beginLua  = rueidis.NewLuaScript(beginScript)
	settleLua = rueidis.NewLuaScript(settleScript)
)

// maxInFlight is how long an unsettled attempt counts in Redis.
const maxInFlight = 5 * time.Minute

// RedisBackoff keeps a [LoginThrottle]'s counts in Redis, shared by the
// replicas, behind the rate limits' breaker; while Redis fails it decides
// as mode says. Create it with [NewRedisBackoff].
type RedisBackoff struct {
	th      *LoginThrottle
	client  rueidis.Client
	prefix  string
	mode    ratelimit.OnStoreError
	breaker *ratelimit.Breaker
	Timeout time.Duration // of each call to Redis
	UseNow  bool          // decide at the now given, not Redis's clock (tests)
}

// NewRedisBackoff returns th's counts in Redis under prefix.
func NewRedisBackoff(client rueidis.Client, prefix string, th *LoginThrottle, mode ratelimit.OnStoreError, breaker *ratelimit.Breaker) *RedisBackoff {
	return &RedisBackoff{th: th, client: client, prefix: prefix, mode: mode, breaker: breaker, Timeout: 100 * time.Millisecond}
}

// Begin admits an attempt, as [LoginThrottle.Begin] does.
func (r *RedisBackoff) Begin(ctx context.Context, username, ip string, now time.Time) (Attempt, error) {
	return r.decide(ctx, Attempt{username: username, ip: ip, id: rand.Text()}, now)
}

// Check reports whether Begin would refuse, as [LoginThrottle.Check] does.
func (r *RedisBackoff) Check(ctx context.Context, username, ip string, now time.Time) error {
	_, err := r.decide(ctx, Attempt{username: username, ip: ip}, now)
	return err
}

// decide runs beginScript for a, or decides as r.mode says without Redis.
func (r *RedisBackoff) decide(ctx context.Context, a Attempt, now time.Time) (Attempt, error) {
	var refused error
	ok, err := r.breaker.Do(ctx, r.Timeout, func(ctx context.Context) (bool, error) {
		var err error
		a.failing, refused, err = r.begin(ctx, a, now)
		return true, err
	})
	switch {
	case err != nil:
		return Attempt{}, unavailable(err)
	case ok && refused != nil:
		return Attempt{}, refused
	case ok:
		return a, nil
	case r.mode == ratelimit.Open:
		return Attempt{}, nil // counted nowhere
	case r.mode == ratelimit.Closed:
		return Attempt{}, unavailable(ratelimit.ErrStoreUnavailable)
	case a.id == "":
		return Attempt{}, r.th.Check(ctx, a.username, a.ip, now)
	}
	return r.th.Begin(ctx, a.username, a.ip, now)
}

// begin runs beginScript in each count of a, taking a back from the
// username's when the address's refuses it.
func (r *RedisBackoff) begin(ctx context.Context, a Attempt, now time.Time) (failing bool, refused, err error) {
	at := "0"
	if r.UseNow {
		at = strconv.FormatInt(now.UnixMicro(), 10)
	}
	us := func(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }
	for i, c := range r.counts(a) {
		got, err := beginLua.Exec(ctx, r.client, []string{c.key},
			[]string{at, strconv.Itoa(c.threshold), us(r.th.BaseDelay), us(r.th.MaxDelay), us(c.forget), us(maxInFlight), c.ttl, a.id}).AsIntSlice()
		if err != nil || got[0] > 0 {
			if i > 0 && a.id != "" { // the username's count admitted it
				_ = r.settle(ctx, a, "drop", "")
			}
			if err != nil {
				return false, nil, err
			}
			return false, &ThrottledError{RetryAfter: time.Duration(got[0]) * time.Microsecond, Key: c.name, Failures: c.threshold}, nil
		}
		failing = failing || got[1] > 0
	}
	return failing, nil, nil
}

// A redisCount is one of an attempt's counts: its key, rule and the TTL, in ms, of its hash.
type redisCount struct {
	name, key, ttl string
	threshold      int
	forget         time.Duration
}

func (r *RedisBackoff) counts(a Attempt) [2]redisCount {
	ttl := func(forget time.Duration) string {
		return strconv.FormatInt(max(forget, maxInFlight).Milliseconds(), 10)
	}
	return [2]redisCount{
		{"username", r.prefix + "user:" + a.username, ttl(r.th.UserForget), r.th.UserFailures, r.th.UserForget},
		{"ip", r.prefix + "ip:" + a.ip, ttl(r.th.IPReset), r.th.IPFailures, r.th.IPReset},
	}
}

// Fail records that an admitted attempt's password was wrong.
func (r *RedisBackoff) Fail(a Attempt) { r.end(a, "fail", "fail", r.th.Fail) }

// Succeed records that an admitted attempt was right.
func (r *RedisBackoff) Succeed(a Attempt) { r.end(a, "reset", "drop", r.th.Succeed) }

// Abandon takes back an attempt whose password was never checked.
func (r *RedisBackoff) Abandon(a Attempt) { r.end(a, "drop", "drop", r.th.Abandon) }

// end settles a in Redis, or with local when admitted without Redis.
func (r *RedisBackoff) end(a Attempt, user, addr string, local func(Attempt)) {
	if a.id == "" {
		local(a)
		return
	}
	_, _ = r.breaker.Do(context.Background(), r.Timeout, func(ctx context.Context) (bool, error) {
		return true, r.settle(ctx, a, user, addr)
	})
}

func (r *RedisBackoff) settle(ctx context.Context, a Attempt, user, addr string) error {
	counts := r.counts(a)
	for i, how := range [2]string{user, addr} {
		if how == "" {
			continue
		}
		if err := settleLua.Exec(ctx, r.client, []string{counts[i].key}, []string{a.id, how, counts[i].ttl}).Error(); err != nil {
			return err
		}
	}
	return nil
}
