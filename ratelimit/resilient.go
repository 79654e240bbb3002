package ratelimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// OnStoreError says what a [Resilient] limiter does while its store fails.
type OnStoreError string

const (
	Local  OnStoreError = "local"  // an in-memory limiter per replica decides
	Open   OnStoreError = "open"   // every request passes
	Closed OnStoreError = "closed" // every request fails (503)
)

// ParseOnStoreError reads local, open or closed.
func ParseOnStoreError(s string) (OnStoreError, error) {
	switch m := OnStoreError(s); m {
	case Local, Open, Closed:
		return m, nil
	}
	return "", errors.New("ratelimit: want local, open or closed")
}

// ErrStoreUnavailable is what a Closed limiter returns during an outage.
var ErrStoreUnavailable = errors.New("ratelimit: store unavailable")

// A Breaker is the circuit breaker of one shared store: after Failures
// failures in a row calls skip the store, until a probe after Cooldown
// (doubling to MaxCooldown) succeeds. Create it with [NewBreaker].
type Breaker struct {
	Failures      int
	Cooldown      time.Duration
	MaxCooldown   time.Duration
	OnStateChange func(state string, err error) // "open" or "closed"; must not block
	Now           func() time.Time              // time.Now by default

	mu       sync.Mutex
	open     bool
	fails    int
	cooldown time.Duration
	retryAt  time.Time
	probing  bool
	errors   atomic.Int64
}

// NewBreaker opens after 3 failures and probes after 1 s, doubling to 30 s.
func NewBreaker() *Breaker {
	return &Breaker{Failures: 3, Cooldown: time.Second, MaxCooldown: 30 * time.Second, Now: time.Now}
}

func (b *Breaker) allow() (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return true, false
	}
	if b.probing || b.Now().Before(b.retryAt) {
		return false, false
	}
	b.probing = true
	return true, true
}

func (b *Breaker) failed(err error, probe bool) {
	b.errors.Add(1)
	b.mu.Lock()
	opened := false
	switch {
	case b.open && probe:
		b.probing = false
		b.cooldown = min(b.cooldown*2, b.MaxCooldown)
		b.retryAt = b.Now().Add(b.cooldown)
	case b.open:
	default:
		if b.fails++; b.fails >= b.Failures {
			b.open, opened = true, true
			b.cooldown = b.Cooldown
			b.retryAt = b.Now().Add(b.cooldown)
		}
	}
	b.mu.Unlock()
	if opened && b.OnStateChange != nil {
		b.OnStateChange("open", err)
	}
}

func (b *Breaker) succeeded() {
	b.mu.Lock()
	closed := b.open
	b.open, b.probing, b.fails = false, false, 0
	b.mu.Unlock()
	if closed && b.OnStateChange != nil {
		b.OnStateChange("closed", nil)
	}
}

func (b *Breaker) abandon(probe bool) {
	if probe {
		b.mu.Lock()
		b.probing = false
		b.mu.Unlock()
	}
}

// Do runs call through the breaker with timeout; ok is false when the
// request must be decided without the store. It fails only if ctx ended.
func (b *Breaker) Do(ctx context.Context, timeout time.Duration, call func(context.Context) (asked bool, err error)) (ok bool, err error) {
	allowed, probe := b.allow()
	if !allowed {
		return false, nil
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	asked, err := call(cctx)
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		b.abandon(probe)
		return false, err
	case err != nil:
		b.failed(err, probe)
		return false, nil
	case !asked:
		b.abandon(probe)
	default:
		b.succeeded()
	}
	return true, nil
}

// Stats reports the store errors seen and whether the breaker is open.
func (b *Breaker) Stats() (storeErrors int64, open bool) {
	b.mu.Lock()
	open = b.open
	b.mu.Unlock()
	return b.errors.Load(), open
}

// Resilient decides with a shared store through a [Breaker], and as its
// mode says while the store fails. Create it with [NewResilient].
type Resilient struct {
	store    Limiter
	fallback Limiter // for Local
	mode     OnStoreError
	breaker  *Breaker
	Timeout  time.Duration

	degradedN atomic.Int64
}

// NewResilient guards store with breaker; fallback decides in Local mode.
func NewResilient(store, fallback Limiter, mode OnStoreError, breaker *Breaker) *Resilient {
	return &Resilient{store: store, fallback: fallback, mode: mode, breaker: breaker, Timeout: 100 * time.Millisecond}
}

// Budget returns the store's budget.
func (r *Resilient) Budget() Budget { return r.store.Budget() }

// Store returns the shared store.
func (r *Resilient) Store() Limiter { return r.store }

// Fallback returns the limiter of Local mode.
func (r *Resilient) Fallback() Limiter { return r.fallback }

// Allow decides with the store, or without it while it fails.
func (r *Resilient) Allow(ctx context.Context, key string) (Decision, error) {
	var d Decision
	ok, err := r.breaker.Do(ctx, r.Timeout, func(ctx context.Context) (asked bool, err error) {
		d, err = r.store.Allow(ctx, key)
		return !d.local, err // the deny cache answers without asking Redis
	})
	switch {
	case err != nil:
		return Decision{}, err
	case !ok:
		return r.degraded(ctx, key)
	}
	return d, nil
}

func (r *Resilient) degraded(ctx context.Context, key string) (Decision, error) {
	r.degradedN.Add(1)
	switch r.mode {
	case Open:
		return Decision{Allowed: true}, nil // N == 0: no rate to report
	case Closed:
		return Decision{}, ErrStoreUnavailable
	}
	d, err := r.fallback.Allow(ctx, key)
	d.local = true
	return d, err
}

// Refund gives back the token d took from whichever decided it.
func (r *Resilient) Refund(ctx context.Context, key string, d *Decision) error {
	switch {
	case d.N == 0: // Open mode: nothing was taken
		return nil
	case d.local:
		return r.fallback.Refund(ctx, key, d)
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	return r.store.Refund(ctx, key, d)
}

// Degraded reports how many decisions were made without the store.
func (r *Resilient) Degraded() int64 { return r.degradedN.Load() }
