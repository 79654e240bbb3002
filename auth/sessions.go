package auth

import (
	"context"
	"errors"
	"time"
)

// Login checks a password and opens a session. Unknown users and wrong
// passwords get the same ErrInvalidCredentials after the same work.
func (s *Service) Login(ctx context.Context, username, password, clientIP string) (string, Session, User, error) {
	now := s.cfg.Now()
	username = NormalizeUsername(username)
	attempt, err := s.Backoff.Begin(ctx, username, clientIP, now)
	if err != nil {
		return "", Session{}, User{}, err
	}
	var u User
	err = ErrNotFound
	if usernameRE.MatchString(username) {
		u, err = s.store.UserByUsername(ctx, username)
	}
	hash := u.PasswordHash
	if errors.Is(err, ErrNotFound) {
		hash = s.dummy
	} else if err != nil {
		s.Backoff.Abandon(attempt)
		return "", Session{}, User{}, unavailable(err)
	}
	var ok bool
	if herr := s.hashes.run(ctx, s.cfg.HashWait, attempt.failing, func() { ok = verifyPassword(password, hash) }); herr != nil {
		s.Backoff.Abandon(attempt)
		return "", Session{}, User{}, unavailable(herr)
	}
	if err != nil || !ok {
		s.Backoff.Fail(attempt)
		return "", Session{}, User{}, ErrInvalidCredentials
	}
	s.Backoff.Succeed(attempt)
	token := newToken()
	at := now.UTC().Truncate(time.Millisecond)
	se := Session{TokenHash: hashSecret(token), UserID: u.ID, CreatedAt: at, ExpiresAt: at.Add(s.cfg.SessionLifetime), LastSeenAt: at}
	evicted, err := s.store.CreateSession(ctx, se, s.cfg.MaxSessions)
	if err != nil {
		return "", Session{}, User{}, unavailable(err)
	}
	s.mu.Lock()
	if len(evicted) > 0 {
		s.gen++
		for _, h := range evicted {
			delete(s.sessions, h)
			delete(s.seen, h)
		}
	}
	if len(s.sessions) >= maxCached {
		s.sweepLocked(now)
	}
	s.sessions[se.TokenHash] = &cached{session: se, user: u, fetched: now, written: at}
	s.mu.Unlock()
	return token, se, u, nil
}

// Authenticate resolves a session token; its last-seen time is queued for
// Flush at most once per TouchInterval.
func (s *Service) Authenticate(ctx context.Context, token string) (*Identity, error) {
	if !looksLikeToken(token) {
		return nil, ErrUnauthenticated
	}
	now := s.cfg.Now()
	hash := hashSecret(token)
	c, raced, err := s.lookupCached(ctx, s.sessions, hash, now,
		func(stale *cached) (*cached, error) { return s.loadSession(ctx, hash, stale, now) },
		func(*cached) { delete(s.seen, hash) })
	if err != nil {
		return nil, err
	}
	if raced { // read again, uncached, after the revocation
		c, err = s.loadSession(ctx, hash, nil, now)
		if errors.Is(err, ErrNotFound) {
			return nil, ErrUnauthenticated
		}
		if err != nil {
			return nil, unavailable(err)
		}
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

// loadSession reads hash's session, keeping the stale entry's newer activity.
func (s *Service) loadSession(ctx context.Context, hash string, stale *cached, now time.Time) (*cached, error) {
	se, u, err := s.store.SessionByTokenHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	fresh := &cached{session: se, user: u, fetched: now, written: se.LastSeenAt}
	if stale != nil {
		s.mu.Lock()
		if stale.session.LastSeenAt.After(se.LastSeenAt) {
			fresh.session.LastSeenAt, fresh.written = stale.session.LastSeenAt, stale.written
		}
		s.mu.Unlock()
	}
	return fresh, nil
}

func (s *Service) alive(se Session, now time.Time) bool {
	return now.Before(se.ExpiresAt) && now.Sub(se.LastSeenAt) < s.cfg.IdleTimeout
}

// Logout ends the caller's session.
func (s *Service) Logout(ctx context.Context, id *Identity) error {
	if id == nil || id.Method != MethodSession {
		return ErrUnauthenticated
	}
	err := s.store.DeleteSession(ctx, id.SessionHash)
	s.revoke(func() { delete(s.sessions, id.SessionHash) })
	return unavailable(err)
}

func (s *Service) evictSession(hash string) {
	s.mu.Lock()
	delete(s.sessions, hash)
	delete(s.seen, hash)
	s.mu.Unlock()
}
