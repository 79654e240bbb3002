package auth

import (
	"cmp"
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/brain-template/brain/internal/expiry"
)

// Config tunes a [Service]. Zero fields take the defaults.
type Config struct {
	SessionLifetime time.Duration // absolute; default DefaultSessionLifetime
	IdleTimeout     time.Duration // default DefaultIdleTimeout
	CacheTTL        time.Duration // how long a replica trusts a lookup; default 10 s
	TouchInterval   time.Duration // how stale a stored last-seen time gets; default 1 min
	Argon2          Argon2Params
	HashConcurrency int           // password hashes at once; default GOMAXPROCS
	HashWait        time.Duration // wait for a hashing slot before ErrBusy
	Now             func() time.Time
	MaxSessions     int // per user: a login beyond it ends the oldest
	MaxAPIKeys      int // per user (ErrTooMany)
}

// The defaults of [Config].
const (
	DefaultMaxSessions     = 20
	DefaultMaxAPIKeys      = 100
	DefaultSessionLifetime = 7 * 24 * time.Hour
	DefaultIdleTimeout     = 24 * time.Hour
	DefaultHashWait        = time.Second
)

// Service is authentication: logins, sessions, API keys. It is safe for
// concurrent use. Run its maintenance loop with [Service.Run].
type Service struct {
	store    Store
	cfg      Config
	Throttle *LoginThrottle // the login back-off's rule and local counts
	Backoff  Backoff        // Throttle, or a RedisBackoff over it
	dummy    string         // verified against when the user is unknown
	hashes   hashSlots

	mu       sync.Mutex
	gen      uint64               // revocations: a lookup that raced one is not cached
	sessions map[string]*cached   // by token hash
	keys     map[string]*cached   // by key hash
	unknown  expiry.Set[string]   // hashes the store did not know
	used     map[string]time.Time // unwritten last use by key id
	seen     map[string]time.Time // unwritten last-seen by token hash
}

// NewService returns a Service over store.
func NewService(store Store, cfg Config) *Service {
	cfg.SessionLifetime = cmp.Or(cfg.SessionLifetime, DefaultSessionLifetime)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout)
	cfg.CacheTTL = cmp.Or(cfg.CacheTTL, 10*time.Second)
	cfg.TouchInterval = cmp.Or(cfg.TouchInterval, min(time.Minute, cfg.IdleTimeout/4))
	cfg.MaxSessions = cmp.Or(cfg.MaxSessions, DefaultMaxSessions)
	cfg.MaxAPIKeys = cmp.Or(cfg.MaxAPIKeys, DefaultMaxAPIKeys)
	cfg.Argon2 = cmp.Or(cfg.Argon2, DefaultArgon2)
	if cfg.HashConcurrency <= 0 {
		cfg.HashConcurrency = runtime.GOMAXPROCS(0)
	}
	if cfg.HashWait <= 0 {
		cfg.HashWait = DefaultHashWait
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	th := NewLoginThrottle()
	return &Service{
		store: store, cfg: cfg, Throttle: th, Backoff: th,
		dummy:    HashPassword(newToken(), cfg.Argon2),
		hashes:   newHashSlots(cfg.HashConcurrency),
		sessions: map[string]*cached{}, keys: map[string]*cached{},
		used: map[string]time.Time{}, seen: map[string]time.Time{}, unknown: expiry.Set[string]{Max: maxUnknown},
	}
}

func (s *Service) stamp() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// Config returns the service's effective configuration.
func (s *Service) Config() Config { return s.cfg }

// Flush writes the last-use and last-seen times requests recorded, keeping
// what fails for the next Flush.
func (s *Service) Flush(ctx context.Context) error {
	s.mu.Lock()
	used, seen := s.used, s.seen
	s.used, s.seen = map[string]time.Time{}, map[string]time.Time{}
	s.mu.Unlock()
	kerr := s.store.TouchAPIKeys(ctx, used)
	serr := s.store.TouchSessions(ctx, seen)
	s.mu.Lock()
	if kerr != nil {
		keepNewest(s.used, used)
	}
	if serr != nil {
		keepNewest(s.seen, seen)
	}
	s.mu.Unlock()
	return errors.Join(kerr, serr)
}

func keepNewest(to, from map[string]time.Time) {
	for k, t := range from {
		if t.After(to[k]) {
			to[k] = t
		}
	}
}

// Run flushes every interval and deletes dead sessions every hour until
// ctx is done, then flushes once more.
func (s *Service) Run(ctx context.Context, interval time.Duration, onError func(error)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	lastPurge := time.Time{}
	for {
		select {
		case <-ctx.Done():
			if err := s.Flush(context.WithoutCancel(ctx)); err != nil {
				onError(err)
			}
			return
		case <-tick.C:
		}
		if err := s.Flush(ctx); err != nil {
			onError(err)
		}
		if now := s.cfg.Now(); now.Sub(lastPurge) >= time.Hour {
			lastPurge = now
			if _, err := s.store.DeleteExpiredSessions(ctx, now, s.cfg.IdleTimeout); err != nil {
				onError(err)
			}
		}
	}
}
