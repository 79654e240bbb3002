package auth

import (
	"sync"
	"time"
)

// A LoginThrottle slows password guessing with a back-off, not a token
// bucket (API.md, the login row). After UserFailures consecutive failures
// for a username, or IPFailures for a client IP, each further attempt must
// wait: BaseDelay, doubling with each failure, capped at MaxDelay. A
// success resets the username's count; an IP's count resets after IPReset
// without failures. It never bans.
//
// An attempt counts as a failure from the moment it is admitted ([Begin])
// until it succeeds ([Succeed]), so concurrent guesses cannot slip past
// the count while their password hashes are being checked.
//
// The zero value is not usable; create one with [NewLoginThrottle]. It is
// safe for concurrent use. State is per process.
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

type failures struct {
	n    int
	last time.Time
}

// NewLoginThrottle returns the throttle API.md defines: 5 failures per
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

func (e *ThrottledError) Error() string {
	return "auth: too many failed logins; wait " + e.RetryAfter.String()
}

func (t *LoginThrottle) wait(f *failures, threshold int, now time.Time) time.Duration {
	if f == nil || f.n < threshold {
		return 0
	}
	d := t.MaxDelay
	if shift := f.n - threshold; shift < 30 {
		d = min(t.BaseDelay<<shift, t.MaxDelay)
	}
	return f.last.Add(d).Sub(now)
}

// An Attempt is an admitted login attempt, counted as a failure until it
// succeeds ([LoginThrottle.Succeed]) or is taken back because its password
// was never checked ([LoginThrottle.Abandon]).
type Attempt struct {
	username, ip string
	at           time.Time
	// The counts the attempt added to, and their last failures before it.
	user, addr                   *failures
	prevUserFailed, prevIPFailed time.Time
}

// Begin admits an attempt for username from ip at now, counting it as a
// failure until [LoginThrottle.Succeed], or refuses it with a
// *ThrottledError saying how long to wait.
func (t *LoginThrottle) Begin(username, ip string, now time.Time) (Attempt, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	u, i := t.users[username], t.ips[ip]
	if i != nil && now.Sub(i.last) >= t.IPReset {
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
	a := Attempt{username: username, ip: ip, at: now, user: u, addr: i, prevUserFailed: u.last, prevIPFailed: i.last}
	u.n, u.last = u.n+1, now
	i.n, i.last = i.n+1, now
	return a, nil
}

// Check reports whether an attempt for username from ip at now would be
// refused, with the same *ThrottledError as [LoginThrottle.Begin], but
// counts nothing: a server asks it before charging the attempt to any
// other budget, so a refused attempt costs the client nothing else.
func (t *LoginThrottle) Check(username, ip string, now time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.ips[ip]
	if i != nil && now.Sub(i.last) >= t.IPReset {
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

// Succeed records that an admitted attempt was right: the username's count
// resets, and the attempt no longer counts against the IP, neither in its
// count nor in the time of its last failure (which starts the IP's reset).
func (t *LoginThrottle) Succeed(a Attempt) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.users, a.username)
	if i := t.ips[a.ip]; i != nil {
		if i.last.Equal(a.at) {
			i.last = a.prevIPFailed
		}
		if i.n--; i.n <= 0 {
			delete(t.ips, a.ip)
		}
	}
}

// Abandon takes back an admitted attempt whose password was never checked:
// the store failed, or no hashing slot came free in time. Such an attempt
// tells its sender nothing, so it is no failure: both counts, and the times
// of their last failures, are as if it had never begun. A count that was
// reset since (a success, an IP's quiet period) is left alone.
func (t *LoginThrottle) Abandon(a Attempt) {
	t.mu.Lock()
	defer t.mu.Unlock()
	undo := func(counts map[string]*failures, key string, f *failures, prev time.Time) {
		if f == nil || counts[key] != f {
			return // reset since; the count there now is not this attempt's
		}
		if f.last.Equal(a.at) {
			f.last = prev
		}
		if f.n--; f.n <= 0 {
			delete(counts, key)
		}
	}
	undo(t.users, a.username, a.user, a.prevUserFailed)
	undo(t.ips, a.ip, a.addr, a.prevIPFailed)
}

// sweep drops counts that no longer matter, at most once a minute.
func (t *LoginThrottle) sweep(now time.Time) {
	if now.Sub(t.swept) < time.Minute {
		return
	}
	t.swept = now
	for k, f := range t.ips {
		if now.Sub(f.last) >= t.IPReset {
			delete(t.ips, k)
		}
	}
	for k, f := range t.users {
		if now.Sub(f.last) >= t.UserForget {
			delete(t.users, k)
		}
	}
}
