// This replica's caches of sessions, API keys and unknown credentials, and
// the one protocol Authenticate and AuthenticateKey follow to use them:
// trust an entry for CacheTTL, refuse a hash the store just said it does
// not know, look up the rest, forget what the store says is gone, and
// cache nothing a revocation raced.

package auth

import (
	"context"
	"errors"
	"time"
)

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

func (c *cachedSession) fetchedAt() time.Time { return c.fetched }
func (c *cachedKey) fetchedAt() time.Time     { return c.fetched }

// A cacheEntry is what a credential cache keeps: a *cachedSession or a
// *cachedKey, read from the store at fetchedAt.
type cacheEntry interface {
	comparable
	fetchedAt() time.Time
}

// maxCached bounds each cache; past it, entries older than CacheTTL go.
const maxCached = 100_000

// maxUnknown bounds the cache of unknown credentials (about 100 bytes an
// entry): a flood of made-up ones replaces older entries.
const maxUnknown = 10_000

// A credentialLookup is what differs between a session's lookup and a
// key's in the protocol of [lookupCached].
type credentialLookup[E cacheEntry] struct {
	cache map[string]E // s.sessions or s.keys, guarded by s.mu
	// load reads the credential from the store, given the stale entry it
	// replaces (zero when none). The store's ErrNotFound passes through.
	load func(stale E) (E, error)
	// forget, when set, drops what this replica keeps of the credential
	// beside its cache entry (a write of it queued for Flush), given the
	// stale entry (zero when none). It runs under s.mu.
	forget func(stale E)
}

// lookupCached returns the entry for hash: the cached one while it is
// younger than CacheTTL; else the one l.load reads, which it caches. It
// returns ErrUnauthenticated for a hash the store said within CacheTTL it
// does not know (unless an entry is cached) or says so now (then the
// entry goes: [forgetGone]), and ErrNotCached when nothing is cached and
// ctx allows no lookup ([WithoutLookup]). When a revocation raced the
// lookup, raced is true and the entry is not cached: it may be what was
// just revoked.
func lookupCached[E cacheEntry](ctx context.Context, s *Service, l credentialLookup[E], hash string, now time.Time) (e E, raced bool, err error) {
	var none E
	s.mu.Lock()
	c := l.cache[hash]
	gen := s.gen
	known := s.knownUnknownLocked(hash, now)
	s.mu.Unlock()
	if c != none && now.Sub(c.fetchedAt()) < s.cfg.CacheTTL {
		return c, false, nil
	}
	if c == none && known {
		return none, false, ErrUnauthenticated
	}
	if c == none && !lookupAllowed(ctx) {
		return none, false, ErrNotCached
	}
	fresh, err := l.load(c)
	if errors.Is(err, ErrNotFound) {
		forgetGone(s, l, hash, c, now)
		return none, false, ErrUnauthenticated
	}
	if err != nil {
		return none, false, unavailable(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return fresh, true, nil
	}
	if len(l.cache) >= maxCached {
		s.sweepLocked(now)
	}
	l.cache[hash] = fresh
	return fresh, false, nil
}

// knownUnknownLocked reports whether the store said within CacheTTL that
// it does not know hash.
func (s *Service) knownUnknownLocked(hash string, now time.Time) bool {
	return s.unknown.Has(hash, now)
}

// forgetGone makes hash, which the store has just said it does not know,
// a credential this replica does not know either: it drops its cache
// entry, if any (a credential deleted on another replica, whose entry went
// stale here), and what l.forget names beside it, and remembers the hash
// as unknown for CacheTTL. Kept, the stale entry would hide the hash from
// the cache of unknown ones (every request with it would reach the store)
// and make it a credential seen valid, which [WithoutLookup] still looks
// up. When the cache of unknown ones is full it drops the expired
// entries, then any others, to a tenth below the bound (expiry.Set).
func forgetGone[E cacheEntry](s *Service, l credentialLookup[E], hash string, stale E, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(l.cache, hash)
	if l.forget != nil {
		l.forget(stale)
	}
	s.unknown.Add(hash, now.Add(s.cfg.CacheTTL), now)
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
