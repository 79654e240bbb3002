package auth

import (
	"context"
	"errors"
	"time"
)

// A cached credential is a session (in Service.sessions) or an API key (in
// Service.keys), with its user as the store had them when fetched.
type cached struct {
	session Session // LastSeenAt: the last request this replica saw
	key     APIKey
	user    User
	fetched time.Time
	written time.Time // of a session: when this replica last queued a write of LastSeenAt
}

const (
	maxCached  = 100_000
	maxUnknown = 10_000
)

// lookupCached returns hash's entry of cache, cached for CacheTTL unless a
// revocation raced the load (raced). load reads the credential from the
// store; forget drops the queued writes of one the store no longer has, under s.mu.
func (s *Service) lookupCached(ctx context.Context, cache map[string]*cached, hash string, now time.Time,
	load func(stale *cached) (*cached, error), forget func(stale *cached)) (c *cached, raced bool, err error) {
	s.mu.Lock()
	c = cache[hash]
	gen := s.gen
	known := s.unknown.Has(hash, now)
	s.mu.Unlock()
	if c != nil && now.Sub(c.fetched) < s.cfg.CacheTTL {
		return c, false, nil
	}
	if c == nil && known {
		return nil, false, ErrUnauthenticated
	}
	if c == nil && !lookupAllowed(ctx) {
		return nil, false, ErrNotCached
	}
	fresh, err := load(c)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, false, unavailable(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil { // gone: the store is not asked again for CacheTTL
		delete(cache, hash)
		forget(c)
		s.unknown.Add(hash, now.Add(s.cfg.CacheTTL), now)
		return nil, false, ErrUnauthenticated
	}
	if s.gen != gen {
		return fresh, true, nil
	}
	if len(cache) >= maxCached {
		s.sweepLocked(now)
	}
	cache[hash] = fresh
	return fresh, false, nil
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
	for _, cache := range []map[string]*cached{s.sessions, s.keys} {
		for h, c := range cache {
			if now.Sub(c.fetched) >= s.cfg.CacheTTL {
				delete(cache, h)
			}
		}
	}
}
