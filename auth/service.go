package auth

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Errors of the [Service].
var (
	// ErrInvalidCredentials: unknown user or wrong password; the two are
	// deliberately one error.
	ErrInvalidCredentials = errors.New("auth: invalid username or password")
	// ErrUnauthenticated: the token or key is unknown, revoked or expired.
	ErrUnauthenticated = errors.New("auth: not authenticated")
	ErrInvalidUsername = errors.New("auth: a username is 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
	ErrWeakPassword    = fmt.Errorf("auth: a password is %d to %d characters", MinPasswordLen, MaxPasswordLen)
	// ErrNotCached: the credentials are not in this replica's caches, and
	// the context asked for no store lookup ([WithoutLookup]).
	ErrNotCached = errors.New("auth: not cached, and no lookup allowed")
	// ErrUnavailable: not the caller's fault, and worth retrying shortly.
	// It wraps every store error other than ErrNotFound, ErrConflict and ErrTooMany
	// (the store is down or too slow), and ErrBusy. A caller that left
	// (context.Canceled) is not marked.
	ErrUnavailable = errors.New("auth: unavailable")
	// ErrBusy: every password-hashing slot stayed taken for the whole
	// HashWait. It wraps ErrUnavailable.
	ErrBusy = fmt.Errorf("%w: every password-hashing slot is busy", ErrUnavailable)
)

// unavailable marks err, from a store or a context, with ErrUnavailable
// unless it is the store's answer (ErrNotFound, ErrConflict, ErrTooMany), the caller's
// leaving (context.Canceled), or marked already.
func unavailable(err error) error {
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) || errors.Is(err, ErrTooMany) || errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// Password bounds.
const (
	MinPasswordLen = 12
	MaxPasswordLen = 1024
)

var usernameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// NormalizeUsername lower-cases and trims a username.
func NormalizeUsername(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// Method says how a caller authenticated.
type Method string

const (
	MethodSession Method = "session" // the session cookie
	MethodAPIKey  Method = "apikey"  // an API key
)

// An Identity is the resolved caller of one request.
type Identity struct {
	User   User
	Method Method
	// SessionHash is set for MethodSession, APIKeyID for MethodAPIKey.
	SessionHash string
	APIKeyID    string
	// ExpiresAt is when the session ends at the latest.
	ExpiresAt time.Time
}

type identityKey struct{}

type noLookupKey struct{}

// WithoutLookup returns ctx asking [Service.Authenticate] and
// [Service.AuthenticateKey] to look up only credentials this replica has
// seen valid (its caches keep them, stale, until they are revoked or
// crowded out), returning ErrNotCached for any others instead of asking
// the store. A server uses it for a client address that is refused for
// sending bad credentials: a flood of made-up ones never reaches the
// database, while the callers it knows behind the same address go on.
func WithoutLookup(ctx context.Context) context.Context {
	return context.WithValue(ctx, noLookupKey{}, true)
}

func lookupAllowed(ctx context.Context) bool { return ctx.Value(noLookupKey{}) == nil }

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the caller stored by NewContext, or nil.
func FromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}

// Config tunes a [Service]. Zero fields take the defaults.
type Config struct {
	SessionLifetime time.Duration // absolute; default 7 days
	IdleTimeout     time.Duration // default 24 h
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
	// slot before it gives up with ErrBusy. Default 1 s. Creating a user
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

// passwordChangeTimeout bounds the write of a password change, which runs
// on even when the caller leaves, so that it happens whole or not at all.
const passwordChangeTimeout = 10 * time.Second

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

// Service is authentication: logins, sessions, API keys. It is safe for
// concurrent use. Run its maintenance loop with [Service.Run].
type Service struct {
	store    Store
	cfg      Config
	Throttle *LoginThrottle
	dummy    string // a hash to verify against when the user is unknown
	hashes   hashSlots

	mu sync.Mutex
	// gen counts revocations (logout, password change, key deletion). A
	// lookup that raced one is not cached: it could put back what was just
	// revoked.
	gen      uint64
	sessions map[string]*cachedSession // by token hash
	keys     map[string]*cachedKey     // by key hash
	// unknown holds the hashes of tokens and keys the store did not know,
	// with when it said so: for CacheTTL they are refused without a
	// lookup. A new token or key cannot be among them: each is random.
	unknown map[string]time.Time
	used    map[string]time.Time // API key id -> last use not yet written
	seen    map[string]time.Time // session token hash -> last-seen time not yet written
}

type cachedSession struct {
	session Session // LastSeenAt: the last request this replica saw
	user    User
	fetched time.Time
	written time.Time // when this replica last queued a write of LastSeenAt
}

type cachedKey struct {
	key     APIKey
	user    User
	fetched time.Time
}

// maxCached bounds each cache; past it, entries older than CacheTTL go.
const maxCached = 100_000

// maxUnknown bounds the cache of unknown credentials (about 100 bytes an
// entry): a flood of made-up ones replaces older entries.
const maxUnknown = 10_000

// NewService returns a Service over store.
func NewService(store Store, cfg Config) *Service {
	if cfg.SessionLifetime == 0 {
		cfg.SessionLifetime = 7 * 24 * time.Hour
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 24 * time.Hour
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
		cfg.HashWait = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{
		store: store, cfg: cfg, Throttle: NewLoginThrottle(),
		dummy:    HashPassword(newToken(), cfg.Argon2),
		hashes:   newHashSlots(cfg.HashConcurrency),
		sessions: map[string]*cachedSession{}, keys: map[string]*cachedKey{},
		used: map[string]time.Time{}, seen: map[string]time.Time{}, unknown: map[string]time.Time{},
	}
}

// stamp is now as stored: UTC, to the millisecond.
func (s *Service) stamp() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// Config returns the service's effective configuration.
func (s *Service) Config() Config { return s.cfg }

// AddUser creates a user. The username is normalized first.
func (s *Service) AddUser(ctx context.Context, username, password string) (User, error) {
	username = NormalizeUsername(username)
	if !usernameRE.MatchString(username) {
		return User{}, ErrInvalidUsername
	}
	if n := len([]rune(password)); n < MinPasswordLen || n > MaxPasswordLen {
		return User{}, ErrWeakPassword
	}
	u := User{ID: newID(), Username: username, CreatedAt: s.stamp()}
	if err := s.hashes.run(ctx, -1, func() { u.PasswordHash = HashPassword(password, s.cfg.Argon2) }); err != nil {
		return User{}, err
	}
	if err := s.store.CreateUser(ctx, u); err != nil {
		return User{}, unavailable(err)
	}
	return u, nil
}

// EnsureAdmin creates the user admin when there are no users: with
// password, or with a random one it returns (to be shown once).
func (s *Service) EnsureAdmin(ctx context.Context, password string) (created bool, generated string, err error) {
	n, err := s.store.CountUsers(ctx)
	if err != nil || n > 0 {
		return false, "", unavailable(err)
	}
	if password == "" {
		password = newToken()[:24]
		generated = password
	}
	if _, err := s.AddUser(ctx, "admin", password); err != nil {
		if errors.Is(err, ErrConflict) { // another replica won the race
			return false, "", nil
		}
		return false, "", err
	}
	return true, generated, nil
}

// Login checks a password and opens a session. It returns the session's
// token (for the cookie), the session and its user. Unknown users and
// wrong passwords return the same ErrInvalidCredentials after the same
// work; a throttled attempt returns a *ThrottledError. When the password
// could not be checked (ErrUnavailable: the store failed, or ErrBusy) the
// attempt is no failure: the throttle takes it back. When the user has
// MaxSessions already, the oldest ones end: at once on this replica,
// within CacheTTL on others.
func (s *Service) Login(ctx context.Context, username, password, clientIP string) (string, Session, User, error) {
	now := s.cfg.Now()
	username = NormalizeUsername(username)
	attempt, err := s.Throttle.Begin(username, clientIP, now)
	if err != nil {
		return "", Session{}, User{}, err
	}
	var u User
	err = ErrNotFound
	if usernameRE.MatchString(username) { // one that cannot exist is simply unknown
		u, err = s.store.UserByUsername(ctx, username)
	}
	hash := u.PasswordHash
	if errors.Is(err, ErrNotFound) {
		hash = s.dummy
	} else if err != nil {
		s.Throttle.Abandon(attempt)
		return "", Session{}, User{}, unavailable(err)
	}
	var ok bool
	var verr error
	if herr := s.hashes.run(ctx, s.cfg.HashWait, func() { ok, verr = VerifyPassword(password, hash) }); herr != nil {
		s.Throttle.Abandon(attempt)
		return "", Session{}, User{}, unavailable(herr)
	}
	if err != nil || !ok || verr != nil {
		s.Throttle.Fail(attempt)
		return "", Session{}, User{}, ErrInvalidCredentials
	}
	s.Throttle.Succeed(attempt)
	token := newToken()
	at := now.UTC().Truncate(time.Millisecond)
	se := Session{TokenHash: hashSecret(token), UserID: u.ID, CreatedAt: at, ExpiresAt: at.Add(s.cfg.SessionLifetime), LastSeenAt: at}
	evicted, err := s.store.CreateSession(ctx, se, s.cfg.MaxSessions)
	if err != nil {
		return "", Session{}, User{}, unavailable(err)
	}
	s.mu.Lock()
	if len(evicted) > 0 {
		s.gen++ // a lookup that read one of them before the delete must not cache it
		for _, h := range evicted {
			delete(s.sessions, h)
			delete(s.seen, h)
		}
	}
	if len(s.sessions) >= maxCached {
		s.sweepLocked(now)
	}
	// The new session is known here: its first request needs no lookup.
	s.sessions[se.TokenHash] = &cachedSession{session: se, user: u, fetched: now, written: at}
	s.mu.Unlock()
	return token, se, u, nil
}

// Authenticate resolves a session token. Within CacheTTL of its last
// lookup it costs no database round trip. Every request counts as activity
// for the idle timeout at once on this replica; the database's last-seen
// time, which other replicas read, is queued for writing at most once per
// TouchInterval and written by Flush (see Run), never by the request: a
// database that does not answer cannot hold a request that needs no
// lookup.
func (s *Service) Authenticate(ctx context.Context, token string) (*Identity, error) {
	if !looksLikeToken(token) {
		return nil, ErrUnauthenticated
	}
	now := s.cfg.Now()
	hash := hashSecret(token)
	s.mu.Lock()
	c := s.sessions[hash]
	gen := s.gen
	known := s.knownUnknownLocked(hash, now)
	s.mu.Unlock()
	if c == nil && known {
		return nil, ErrUnauthenticated
	}
	if c == nil || now.Sub(c.fetched) >= s.cfg.CacheTTL {
		if c == nil && !lookupAllowed(ctx) {
			return nil, ErrNotCached
		}
		se, u, err := s.store.SessionByTokenHash(ctx, hash)
		if errors.Is(err, ErrNotFound) {
			s.evictSession(hash)
			s.rememberUnknown(hash, now)
			return nil, ErrUnauthenticated
		}
		if err != nil {
			return nil, unavailable(err)
		}
		fresh := &cachedSession{session: se, user: u, fetched: now, written: se.LastSeenAt}
		if c != nil && c.session.LastSeenAt.After(se.LastSeenAt) {
			fresh.session.LastSeenAt, fresh.written = c.session.LastSeenAt, c.written // activity not yet written
		}
		s.mu.Lock()
		if s.gen != gen {
			s.mu.Unlock()
			return s.authenticateUncached(ctx, hash, now)
		}
		if len(s.sessions) >= maxCached {
			s.sweepLocked(now)
		}
		s.sessions[hash] = fresh
		s.mu.Unlock()
		c = fresh
	}
	s.mu.Lock()
	se, u := c.session, c.user
	if !s.alive(se, now) {
		s.mu.Unlock()
		s.evictSession(hash)
		return nil, ErrUnauthenticated
	}
	c.session.LastSeenAt = now
	if now.Sub(c.written) >= s.cfg.TouchInterval {
		c.written = now
		s.seen[hash] = now.UTC().Truncate(time.Millisecond)
	}
	s.mu.Unlock()
	return &Identity{User: u, Method: MethodSession, SessionHash: hash, ExpiresAt: se.ExpiresAt}, nil
}

// authenticateUncached reads a session that a revocation raced, without
// caching it.
func (s *Service) authenticateUncached(ctx context.Context, hash string, now time.Time) (*Identity, error) {
	se, u, err := s.store.SessionByTokenHash(ctx, hash)
	if errors.Is(err, ErrNotFound) {
		return nil, ErrUnauthenticated
	}
	if err != nil {
		return nil, unavailable(err)
	}
	if !s.alive(se, now) {
		return nil, ErrUnauthenticated
	}
	return &Identity{User: u, Method: MethodSession, SessionHash: hash, ExpiresAt: se.ExpiresAt}, nil
}

// alive reports whether se has neither reached its end of life nor idled
// out at now.
func (s *Service) alive(se Session, now time.Time) bool {
	return now.Before(se.ExpiresAt) && now.Sub(se.LastSeenAt) < s.cfg.IdleTimeout
}

// AuthenticateKey resolves an API key, with the same cache as sessions.
// Its last-use time is recorded in memory and written by [Service.Flush].
func (s *Service) AuthenticateKey(ctx context.Context, key string) (*Identity, error) {
	if !looksLikeKey(key) {
		return nil, ErrUnauthenticated
	}
	now := s.cfg.Now()
	hash := hashSecret(key)
	s.mu.Lock()
	c := s.keys[hash]
	gen := s.gen
	known := s.knownUnknownLocked(hash, now)
	s.mu.Unlock()
	if c == nil && known {
		return nil, ErrUnauthenticated
	}
	if c == nil || now.Sub(c.fetched) >= s.cfg.CacheTTL {
		if c == nil && !lookupAllowed(ctx) {
			return nil, ErrNotCached
		}
		k, u, err := s.store.APIKeyByHash(ctx, hash)
		if errors.Is(err, ErrNotFound) {
			s.rememberUnknown(hash, now)
			return nil, ErrUnauthenticated
		}
		if err != nil {
			return nil, unavailable(err)
		}
		c = &cachedKey{key: k, user: u, fetched: now}
		s.mu.Lock()
		if s.gen == gen { // else a revocation raced the lookup: use it once, cache nothing
			if len(s.keys) >= maxCached {
				s.sweepLocked(now)
			}
			s.keys[hash] = c
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.used[c.key.ID] = now.UTC().Truncate(time.Millisecond) // as stored, and as every time the API shows
	s.mu.Unlock()
	return &Identity{User: c.user, Method: MethodAPIKey, APIKeyID: c.key.ID}, nil
}

// Logout ends the caller's session at once on this replica (other replicas
// within CacheTTL).
func (s *Service) Logout(ctx context.Context, id *Identity) error {
	if id == nil || id.Method != MethodSession {
		return ErrUnauthenticated
	}
	err := s.store.DeleteSession(ctx, id.SessionHash)
	s.revoke(func() { delete(s.sessions, id.SessionHash) })
	return unavailable(err)
}

// ChangePassword checks current, then sets next and ends every other
// session of the user in one write: both happen or neither, even when the
// caller leaves half-way. A wrong current password counts as a failed
// login; one that could not be checked (ErrUnavailable) does not.
func (s *Service) ChangePassword(ctx context.Context, id *Identity, clientIP, current, next string) error {
	if n := len([]rune(next)); n < MinPasswordLen || n > MaxPasswordLen {
		return ErrWeakPassword
	}
	attempt, err := s.Throttle.Begin(id.User.Username, clientIP, s.cfg.Now())
	if err != nil {
		return err
	}
	u, err := s.store.UserByID(ctx, id.User.ID)
	if err != nil {
		s.Throttle.Abandon(attempt)
		return unavailable(err)
	}
	var ok bool
	var hash string
	err = s.hashes.run(ctx, s.cfg.HashWait, func() { // one slot for both hashes
		if ok, _ = VerifyPassword(current, u.PasswordHash); ok {
			hash = HashPassword(next, s.cfg.Argon2)
		}
	})
	if err != nil {
		s.Throttle.Abandon(attempt)
		return unavailable(err)
	}
	if !ok {
		s.Throttle.Fail(attempt)
		return ErrInvalidCredentials
	}
	s.Throttle.Succeed(attempt)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), passwordChangeTimeout)
	defer cancel()
	if err := s.store.SetPasswordAndEndSessions(wctx, u.ID, hash, id.SessionHash); err != nil {
		return unavailable(err)
	}
	s.revoke(func() { s.forgetSessionsLocked(u.ID, id.SessionHash) })
	return nil
}

// CreateAPIKey makes a key for the user and returns it with its secret,
// which is shown once and never stored. A user with MaxAPIKeys keys
// already gets ErrTooMany.
func (s *Service) CreateAPIKey(ctx context.Context, userID, name string) (APIKey, string, error) {
	secret := newAPIKey()
	k := APIKey{ID: newID(), UserID: userID, Name: name, Prefix: secret[:len(KeyPrefix)+8], KeyHash: hashSecret(secret), CreatedAt: s.stamp()}
	if err := s.store.CreateAPIKey(ctx, k, s.cfg.MaxAPIKeys); err != nil {
		return APIKey{}, "", unavailable(err)
	}
	return k, secret, nil
}

// ListAPIKeys returns a page of the user's keys: up to limit (at least 1)
// after the cursor, newest first, with last-use times this replica has not
// written yet. next is where the next page starts; it is zero on the last
// page.
func (s *Service) ListAPIKeys(ctx context.Context, userID string, after Cursor, limit int) (keys []APIKey, next Cursor, err error) {
	limit = max(limit, 1)
	keys, err = s.store.ListAPIKeys(ctx, userID, after, limit+1) // one more tells whether a next page exists
	if err != nil {
		return nil, Cursor{}, unavailable(err)
	}
	if len(keys) > limit {
		keys = keys[:limit]
		next = Cursor{CreatedAt: keys[limit-1].CreatedAt, ID: keys[limit-1].ID}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range keys {
		if t, ok := s.used[keys[i].ID]; ok && t.After(keys[i].LastUsedAt) {
			keys[i].LastUsedAt = t
		}
	}
	return keys, next, nil
}

// DeleteAPIKey revokes one of the user's keys: at once on this replica,
// within CacheTTL on others. ErrNotFound unless the user owns it.
func (s *Service) DeleteAPIKey(ctx context.Context, userID, id string) error {
	if err := s.store.DeleteAPIKey(ctx, userID, id); err != nil {
		return unavailable(err)
	}
	s.revoke(func() {
		for h, c := range s.keys {
			if c.key.ID == id {
				delete(s.keys, h)
			}
		}
		delete(s.used, id)
	})
	return nil
}

// Flush writes what requests recorded but did not write: the API keys'
// last-use times and the sessions' last-seen times, each kind in one
// transaction. What it fails to write is kept for the next Flush.
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

// keepNewest puts the times of from back into to, unless to has newer ones.
func keepNewest(to, from map[string]time.Time) {
	for k, t := range from {
		if t.After(to[k]) {
			to[k] = t
		}
	}
}

// Run flushes last-use and last-seen times every interval and deletes dead
// sessions every hour, until ctx is done; then it flushes once more. These
// are the Service's only writes outside a request, and no request waits
// for them. Each store call ends within the store's own deadline (see
// Store), so a database that does not answer delays this loop, and the
// final flush of a shutdown, by that much, never for good.
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

// knownUnknownLocked reports whether the store said within CacheTTL that
// it does not know hash.
func (s *Service) knownUnknownLocked(hash string, now time.Time) bool {
	at, ok := s.unknown[hash]
	return ok && now.Sub(at) < s.cfg.CacheTTL
}

// rememberUnknown records that the store does not know hash. When the
// cache is full it drops the expired entries, then any others, to a tenth
// below the bound.
func (s *Service) rememberUnknown(hash string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unknown) >= maxUnknown {
		for h, at := range s.unknown {
			if now.Sub(at) >= s.cfg.CacheTTL {
				delete(s.unknown, h)
			}
		}
		for h := range s.unknown { // map order: an arbitrary tenth
			if len(s.unknown) < maxUnknown*9/10 {
				break
			}
			delete(s.unknown, h)
		}
	}
	s.unknown[hash] = now
}

func (s *Service) evictSession(hash string) {
	s.mu.Lock()
	delete(s.sessions, hash)
	delete(s.seen, hash)
	s.mu.Unlock()
}

// revoke records a revocation the store has committed: under one lock, it
// drops what drop removes from the caches and bumps the generation, so a
// lookup that read the revoked row before the write does not cache it.
// Called after the write: bumped before it, a lookup could start after the
// bump, read the old row and cache it once the eviction was done.
func (s *Service) revoke(drop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	drop()
}

func (s *Service) sweepLocked(now time.Time) {
	for h, c := range s.sessions {
		if now.Sub(c.fetched) >= s.cfg.CacheTTL {
			delete(s.sessions, h)
		}
	}
	for h, c := range s.keys {
		if now.Sub(c.fetched) >= s.cfg.CacheTTL {
			delete(s.keys, h)
		}
	}
}
