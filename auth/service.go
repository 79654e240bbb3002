// The Service and its configuration: the defaults, the caches it keeps
// and how it is made.

package auth

import (
	"runtime"
	"sync"
	"time"

	"github.com/brain-template/brain/internal/expiry"
)

// Config tunes a [Service]. Zero fields take the defaults.
type Config struct {
	SessionLifetime time.Duration // absolute; default DefaultSessionLifetime
	IdleTimeout     time.Duration // default DefaultIdleTimeout
	// CacheTTL is how long a replica trusts a session or key it looked up
	// before it asks the database again: how long a session revoked on
	// another replica may still be accepted here. Default 10 s.
	CacheTTL time.Duration
	// TouchInterval is how stale a session's last-seen time in the
	// database may get before a request queues a write of it (Flush writes
	// the queue). Default 1 min.
	TouchInterval time.Duration
	Argon2        Argon2Params
	// HashConcurrency bounds the password hashes (each holding
	// Argon2.Memory) that run at once. Default GOMAXPROCS: a hash needs a
	// core, so more would only share the cores and multiply the memory.
	HashConcurrency int
	// HashWait is how long a login or password change waits for a hashing
	// slot before it gives up with ErrBusy. Default DefaultHashWait. Creating a user
	// waits as long as its context allows.
	HashWait time.Duration
	Now      func() time.Time

	// MaxSessions caps each user's live sessions: a login beyond it ends
	// the user's oldest session. Default DefaultMaxSessions.
	MaxSessions int
	// MaxAPIKeys caps each user's API keys: creating one more fails with
	// ErrTooMany. Default DefaultMaxAPIKeys.
	MaxAPIKeys int
}

// The default caps per user.
const (
	// DefaultMaxSessions leaves room for every browser and device a person
	// uses, and for logins whose cookies were lost, while it bounds the
	// rows a user can make and the session rate budgets (one per session)
	// a user can hold at once.
	DefaultMaxSessions = 20
	// DefaultMaxAPIKeys: one key per program or machine, with room to
	// spare; a list of them is one page of GET /apikeys.
	DefaultMaxAPIKeys = 100
)

// The default lifetimes of a session, and a login's wait for a hashing
// slot.
const (
	DefaultSessionLifetime = 7 * 24 * time.Hour
	DefaultIdleTimeout     = 24 * time.Hour
	// DefaultHashWait: a login that waits longer is better told to retry.
	DefaultHashWait = time.Second
)

// Service is authentication: logins, sessions, API keys. It is safe for
// concurrent use. Run its maintenance loop with [Service.Run].
type Service struct {
	store Store
	cfg   Config
	// Throttle is the login back-off: its thresholds and waits, which the
	// spec shows, and the counts it keeps in this process.
	Throttle *LoginThrottle
	// Backoff keeps the counts the login back-off decides from: Throttle
	// itself, or a [RedisBackoff] over it that every replica shares.
	Backoff Backoff
	dummy   string // a hash to verify against when the user is unknown
	hashes  hashSlots

	mu sync.Mutex
	// gen counts revocations (logout, password change, key deletion). A
	// lookup that raced one is not cached: it could put back what was just
	// revoked.
	gen      uint64
	sessions map[string]*cachedSession // by token hash
	keys     map[string]*cachedKey     // by key hash
	// unknown holds the hashes of tokens and keys the store did not know,
	// until CacheTTL after it said so: till then they are refused without
	// a lookup. A new token or key cannot be among them: each is random.
	unknown expiry.Set[string]
	used    map[string]time.Time // API key id -> last use not yet written
	seen    map[string]time.Time // session token hash -> last-seen time not yet written
}

// NewService returns a Service over store.
func NewService(store Store, cfg Config) *Service {
	if cfg.SessionLifetime == 0 {
		cfg.SessionLifetime = DefaultSessionLifetime
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = 10 * time.Second
	}
	if cfg.TouchInterval == 0 {
		// Often enough that another replica's view of "last seen" lags
		// by at most a quarter of the idle timeout, plus the interval at
		// which Run flushes.
		cfg.TouchInterval = min(time.Minute, cfg.IdleTimeout/4)
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxAPIKeys == 0 {
		cfg.MaxAPIKeys = DefaultMaxAPIKeys
	}
	if cfg.Argon2 == (Argon2Params{}) {
		cfg.Argon2 = DefaultArgon2
	}
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
		sessions: map[string]*cachedSession{}, keys: map[string]*cachedKey{},
		used: map[string]time.Time{}, seen: map[string]time.Time{}, unknown: expiry.Set[string]{Max: maxUnknown},
	}
}

// stamp is now as stored: UTC, to the millisecond.
func (s *Service) stamp() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// Config returns the service's effective configuration.
func (s *Service) Config() Config { return s.cfg }
