package auth

import (
	"context"
	"sync"
	"time"
)

// A Backoff keeps the counts a [LoginThrottle] decides from: the
// throttle itself keeps them in this process, a [RedisBackoff] in Redis
// for every replica. Begin and Check may return an error that is no
// *ThrottledError (marked [ErrUnavailable], or ctx's) when the counts
// cannot be read.
type Backoff interface {
	Begin(ctx context.Context, username, ip string, now time.Time) (Attempt, error)
	Check(ctx context.Context, username, ip string, now time.Time) error
	Fail(a Attempt)
	Succeed(a Attempt)
	Abandon(a Attempt)
}

// A LoginThrottle slows password guessing with a back-off, not a token
// bucket (docs/rate-limiting.md, docs/auth.md). After UserFailures consecutive failures
// for a username, or IPFailures for a client IP, each further attempt must
// wait: BaseDelay, doubling with each failure, capped at MaxDelay. A
// success resets the username's count; an IP's count resets after IPReset
// without failures. It never bans.
//
// An attempt counts against both counts from the moment it is admitted
// ([LoginThrottle.Begin]), so concurrent guesses cannot slip past them
// while their password hashes are being checked. It becomes a failure
// only when its password was checked and found wrong
// ([LoginThrottle.Fail]); one that succeeds ([LoginThrottle.Succeed]) or
// whose password was never checked ([LoginThrottle.Abandon]: the store
// failed, no hashing slot came free) leaves no trace.
//
// The zero value is not usable; create one with [NewLoginThrottle]. It is
// safe for concurrent use. Its counts are this process's; a
// [RedisBackoff] keeps them for every replica.
type LoginThrottle struct {
	UserFailures, IPFailures int
	BaseDelay, MaxDelay      time.Duration
	IPReset                  time.Duration
	// UserForget drops a username's count after this long without a
	// failure, which bounds memory under a flood of invented usernames.
	UserForget time.Duration

	mu    sync.Mutex
	users map[string]*failures
	ips   map[string]*failures
	swept time.Time
}

// failures is one username's or one address's count.
type failures struct {
	n       int       // checked failures
	last    time.Time // the latest checked failure
	pending int       // attempts admitted and not yet settled
	begun   time.Time // the latest admitted attempt, while any is pending
}

// latest is when the back-off counts from: the latest failure, or the
// latest attempt still in flight.
func (f *failures) latest() time.Time {
	if f.pending > 0 && f.begun.After(f.last) {
		return f.begun
	}
	return f.last
}

// idle reports whether f has nothing in flight and its latest failure is
// at least d before now.
func (f *failures) idle(now time.Time, d time.Duration) bool {
	return f.pending == 0 && now.Sub(f.last) >= d
}

// NewLoginThrottle returns the default throttle: 5 failures per
// username, 20 per IP, 1 s doubling to 15 min, IP counts reset after 15 min.
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
	// Key says which count refused it: "username" or "ip".
	Key string
	// Failures is the threshold of that count (5 or 20 by default).
	Failures int
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
	return f.latest().Add(d).Sub(now)
}

// An Attempt is an admitted login attempt. Settle it exactly once, with
// the Fail, Succeed or Abandon of the [Backoff] that began it.
type Attempt struct {
	username, ip string
	at           time.Time
	user, addr   *failures // the counts it was admitted into, in memory
	id           string    // its place in the counts in Redis
	// failing: its username or its address has failed recently (their
	// counts are not zero), so its password check waits behind the others.
	failing bool
}

// Begin admits an attempt for username from ip at now, or refuses it with
// a *ThrottledError saying how long to wait. Until it is settled, the
// attempt counts as a failure for the attempts that follow.
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

// Check reports whether an attempt for username from ip at now would be
// refused, with the same *ThrottledError as [LoginThrottle.Begin], but
// counts nothing: a server asks it before charging the attempt to any
// other budget, so a refused attempt costs the client nothing else.
func (t *LoginThrottle) Check(_ context.Context, username, ip string, now time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.ips[ip]
	if i != nil && i.idle(now, t.IPReset) {
		i = nil
	}
	return t.refuse(t.users[username], i, now)
}

// refuse returns the *ThrottledError for counts u and i at now, or nil.
func (t *LoginThrottle) refuse(u, i *failures, now time.Time) error {
	if w := t.wait(u, t.UserFailures, now); w > 0 {
		return &ThrottledError{RetryAfter: w, Key: "username", Failures: t.UserFailures}
	}
	if w := t.wait(i, t.IPFailures, now); w > 0 {
		return &ThrottledError{RetryAfter: w, Key: "ip", Failures: t.IPFailures}
	}
	return nil
}

// settle ends attempt a in both of its counts, calling f on each count
// that is still the one a was admitted into (a success may have reset the
// username's since).
func (t *LoginThrottle) settle(a Attempt, f func(counts map[string]*failures, key string, c *failures)) {
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
	t.mu.Lock()
	defer t.mu.Unlock()
	t.settle(a, func(_ map[string]*failures, _ string, c *failures) {
		c.n++
		if a.at.After(c.last) {
			c.last = a.at
		}
	})
}

// Succeed records that an admitted attempt was right: the username's count
// resets; the address keeps its failures (and their times) but not this
// attempt.
func (t *LoginThrottle) Succeed(a Attempt) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.settle(a, func(counts map[string]*failures, key string, c *failures) {
		if c == a.user || (c.n == 0 && c.pending == 0) {
			delete(counts, key)
		}
	})
}

// Abandon takes back an admitted attempt whose password was never checked:
// the store failed, or no hashing slot came free in time. Such an attempt
// tells its sender nothing, so it is no failure: it leaves no trace in
// either count, whatever else began or ended meanwhile.
func (t *LoginThrottle) Abandon(a Attempt) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.settle(a, func(counts map[string]*failures, key string, c *failures) {
		if c.n == 0 && c.pending == 0 {
			delete(counts, key)
		}
	})
}

// sweep drops counts that no longer matter, at most once a minute.
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
