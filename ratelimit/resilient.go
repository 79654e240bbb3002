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
	// Local decides with an in-memory limiter on this replica: each replica
	// enforces the whole budget on its own, so the cluster admits up to
	// replicas × budget until the store is back. The default.
	Local OnStoreError = "local"
	// Open admits every request.
	Open OnStoreError = "open"
	// Closed refuses every request with an error (the API answers 503).
	Closed OnStoreError = "closed"
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

// Resilient puts a circuit breaker and a fallback in front of a shared
// store (Redis). Each call to the store gets Timeout. After Failures
// consecutive failures the breaker opens: calls skip the store and go to
// the fallback at once, so an outage never adds a timeout to every
// request. After Cooldown one call probes the store; if it succeeds the
// breaker closes, else the cooldown doubles, up to MaxCooldown.
//
// Create it with [NewResilient]; it is safe for concurrent use.
type Resilient struct {
	store    Limiter
	fallback Limiter // for Local
	mode     OnStoreError

	Timeout     time.Duration
	Failures    int
	Cooldown    time.Duration
	MaxCooldown time.Duration
	// OnStateChange is called once per transition, with the new state
	// ("open" while the store is skipped, "closed" when it is used again)
	// and the error that caused it. It must not block.
	OnStateChange func(state string, err error)
	// Now defaults to time.Now.
	Now func() time.Time

	mu        sync.Mutex
	open      bool
	fails     int
	cooldown  time.Duration
	retryAt   time.Time
	probing   bool
	errors    atomic.Int64
	fallbacks atomic.Int64
}

// NewResilient returns store guarded by a breaker; fallback decides when
// mode is Local (it must decide the same policy).
func NewResilient(store, fallback Limiter, mode OnStoreError) *Resilient {
	return &Resilient{store: store, fallback: fallback, mode: mode,
		Timeout: 100 * time.Millisecond, Failures: 3, Cooldown: time.Second, MaxCooldown: 30 * time.Second, Now: time.Now}
}

// Policy returns the store's policy.
func (r *Resilient) Policy() Policy { return r.store.Policy() }

// Allow decides with the store, or with the fallback while the store fails.
func (r *Resilient) Allow(ctx context.Context, key string) (Decision, error) {
	if !r.useStore() {
		return r.degraded(ctx, key)
	}
	cctx, cancel := context.WithTimeout(ctx, r.Timeout)
	d, err := r.store.Allow(cctx, key)
	cancel()
	if err != nil && ctx.Err() == nil { // the caller giving up is not an outage
		r.errors.Add(1)
		r.failed(err)
		return r.degraded(ctx, key)
	}
	if err != nil {
		return Decision{}, err
	}
	r.succeeded()
	return d, nil
}

// useStore reports whether this call may go to the store: always while the
// breaker is closed; while open, only the one probe after the cooldown.
func (r *Resilient) useStore() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open {
		return true
	}
	if r.probing || r.Now().Before(r.retryAt) {
		return false
	}
	r.probing = true
	return true
}

func (r *Resilient) failed(err error) {
	r.mu.Lock()
	opened := false
	if r.open {
		r.probing = false
		r.cooldown = min(r.cooldown*2, r.MaxCooldown)
		r.retryAt = r.Now().Add(r.cooldown)
	} else if r.fails++; r.fails >= r.Failures {
		r.open, opened = true, true
		r.cooldown = r.Cooldown
		r.retryAt = r.Now().Add(r.cooldown)
	}
	r.mu.Unlock()
	if opened && r.OnStateChange != nil {
		r.OnStateChange("open", err)
	}
}

func (r *Resilient) succeeded() {
	r.mu.Lock()
	closed := r.open
	r.open, r.probing, r.fails = false, false, 0
	r.mu.Unlock()
	if closed && r.OnStateChange != nil {
		r.OnStateChange("closed", nil)
	}
}

func (r *Resilient) degraded(ctx context.Context, key string) (Decision, error) {
	r.fallbacks.Add(1)
	switch r.mode {
	case Open:
		return Decision{Allowed: true}, nil // N == 0: no budget to report
	case Closed:
		return Decision{}, ErrStoreUnavailable
	}
	return r.fallback.Allow(ctx, key)
}

// Stats reports store errors, decisions made without the store, and
// whether the breaker is open.
func (r *Resilient) Stats() (storeErrors, degraded int64, open bool) {
	r.mu.Lock()
	open = r.open
	r.mu.Unlock()
	return r.errors.Load(), r.fallbacks.Load(), open
}
