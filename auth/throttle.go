package auth

import (
	"context"
	"sync"
	"time"
)

// A Backoff keeps a [LoginThrottle]'s counts: in this process or in Redis.
type Backoff interface {
	Begin(ctx context.Context, username, ip string, now time.Time) (Attempt, error)
	Check(ctx context.Context, username, ip string, now time.Time) error
	Fail(a Attempt)
	Succeed(a Attempt)
	Abandon(a Attempt)
}

// A LoginThrottle slows password guessing (docs/auth.md): past UserFailures
// failures for a username, or IPFailures for an IP, each attempt waits
// BaseDelay, doubling to MaxDelay. Create it with [NewLoginThrottle].
type LoginThrottle struct {
	UserFailures, IPFailures int
	BaseDelay, MaxDelay      time.Duration
	IPReset                  time.Duration
	UserForget               time.Duration // a username's count goes after this long idle

	mu    sync.Mutex
	users map[string]*failures
	ips   map[string]*failures
	swept time.Time
}

type failures struct {
	n       int       // checked failures
	last    time.Time // the latest checked failure
	pending int       // attempts admitted and not yet settled
	begun   time.Time // the latest admitted attempt, while any is pending
}

func (f *failures) idle(now time.Time, d time.Duration) bool {
	return f.pending == 0 && now.Sub(f.last) >= d
}

// NewLoginThrottle returns the default throttle: 5 failures per username,
// 20 per IP, 1 s doubling to 15 min.
func NewLoginThrottle() *LoginThrottle {
	return &LoginThrottle{
		UserFailures: 5, IPFailures: 20,
		BaseDelay: time.Second, MaxDelay: 15 * time.Minute,
		IPReset: 15 * time.Minute, UserForget: 24 * time.Hour,
		users: map[string]*failures{}, ips: map[string]*failures{},
	}
}

// ThrottledError refuses a login attempt that came too soon.
type ThrottledError struct {
	RetryAfter time.Duration
	Key        string // the count that refused it: "username" or "ip"
	Failures   int    // that count's threshold
}

// Error says how long the attempt must wait.
func (e *ThrottledError) Error() string {
	return "auth: too many failed logins; wait " + e.RetryAfter.String()
}

func (t *LoginThrottle) wait(f *failures, threshold int, now time.Time) time.Duration {
	if f == nil || f.n+f.pending < threshold {
		return 0
	}
	d := t.MaxDelay
	if shift := f.n + f.pending - threshold; shift < 30 {
		d = min(t.BaseDelay<<shift, t.MaxDelay)
	}
	from := f.last // the latest failure, or attempt in flight
	if f.pending > 0 && f.begun.After(f.last) {
		from = f.begun
	}
	return from.Add(d).Sub(now)
}

// An Attempt is an admitted login attempt, settled exactly once by the
// [Backoff] that began it.
type Attempt struct {
	username, ip string
	at           time.Time
	user, addr   *failures // in memory
	id           string    // in Redis
	failing      bool      // failed recently: its hash waits behind others
}

// Begin admits an attempt, which counts as a failure until settled, or
// refuses it with a *ThrottledError.
func (t *LoginThrottle) Begin(_ context.Context, username, ip string, now time.Time) (Attempt, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	u, i := t.users[username], t.ips[ip]
	if i != nil && i.idle(now, t.IPReset) {
		delete(t.ips, ip)
		i = nil
	}
	if err := t.refuse(u, i, now); err != nil {
		return Attempt{}, err
	}
	if u == nil {
		u = &failures{}
		t.users[username] = u
	}
	if i == nil {
		i = &failures{}
		t.ips[ip] = i
	}
	for _, f := range []*failures{u, i} {
		f.pending++
		f.begun = now
	}
	return Attempt{username: username, ip: ip, at: now, user: u, addr: i, failing: u.n > 0 || i.n > 0}, nil
}

// Check reports whether Begin would refuse, and counts nothing.
func (t *LoginThrottle) Check(_ context.Context, username, ip string, now time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.ips[ip]
	if i != nil && i.idle(now, t.IPReset) {
		i = nil
	}
	return t.refuse(t.users[username], i, now)
}

func (t *LoginThrottle) refuse(u, i *failures, now time.Time) error {
	if w := t.wait(u, t.UserFailures, now); w > 0 {
		return &ThrottledError{RetryAfter: w, Key: "username", Failures: t.UserFailures}
	}
	if w := t.wait(i, t.IPFailures, now); w > 0 {
		return &ThrottledError{RetryAfter: w, Key: "ip", Failures: t.IPFailures}
	}
	return nil
}

// settle ends a in each count it was admitted into, calling f on it.
func (t *LoginThrottle) settle(a Attempt, f func(counts map[string]*failures, key string, c *failures)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, x := range []struct {
		counts map[string]*failures
		key    string
		c      *failures
	}{{t.users, a.username, a.user}, {t.ips, a.ip, a.addr}} {
		if x.c != nil && x.counts[x.key] == x.c {
			x.c.pending--
			f(x.counts, x.key, x.c)
		}
	}
}

// Fail records that an admitted attempt's password was checked and wrong.
func (t *LoginThrottle) Fail(a Attempt) {
	t.settle(a, func(_ map[string]*failures, _ string, c *failures) {
		c.n++
		if a.at.After(c.last) {
			c.last = a.at
		}
	})
}

// Succeed records that an admitted attempt was right: the username's count resets.
func (t *LoginThrottle) Succeed(a Attempt) {
	t.settle(a, func(counts map[string]*failures, key string, c *failures) {
		if c == a.user || (c.n == 0 && c.pending == 0) {
			delete(counts, key)
		}
	})
}

// Abandon takes back an attempt whose password was never checked.
func (t *LoginThrottle) Abandon(a Attempt) {
	t.settle(a, func(counts map[string]*failures, key string, c *failures) {
		if c.n == 0 && c.pending == 0 {
			delete(counts, key)
		}
	})
}

func (t *LoginThrottle) sweep(now time.Time) {
	if now.Sub(t.swept) < time.Minute {
		return
	}
	t.swept = now
	for k, f := range t.ips {
		if f.idle(now, t.IPReset) {
			delete(t.ips, k)
		}
	}
	for k, f := range t.users {
		if f.idle(now, t.UserForget) {
			delete(t.users, k)
		}
	}
}
