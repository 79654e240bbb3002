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

// A cacheEntry is a *cachedSession or a *cachedKey.
type cacheEntry interface {
	comparable
	fetchedAt() time.Time
}

const (
	maxCached  = 100_000
	maxUnknown = 10_000
)

// A credentialLookup is what differs between a session's lookup and a key's.
type credentialLookup[E cacheEntry] struct {
	cache  map[string]E             // guarded by s.mu
	load   func(stale E) (E, error) // reads the credential from the store
	forget func(stale E)            // drops its queued writes, under s.mu
}

// lookupCached returns hash's entry, cached for CacheTTL unless a
// revocation raced the load (raced).
func lookupCached[E cacheEntry](ctx context.Context, s *Service, l credentialLookup[E], hash string, now time.Time) (e E, raced bool, err error) {
	var none E
	s.mu.Lock()
	c := l.cache[hash]
	gen := s.gen
	known := s.unknown.Has(hash, now)
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

// forgetGone drops hash, which the store does not know, for CacheTTL.
func forgetGone[E cacheEntry](s *Service, l credentialLookup[E], hash string, stale E, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(l.cache, hash)
	if l.forget != nil {
		l.forget(stale)
	}
	s.unknown.Add(hash, now.Add(s.cfg.CacheTTL), now)
}

// revoke runs drop and bumps the generation, so a lookup that read a
// revoked row does not cache it.
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
