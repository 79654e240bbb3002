package auth

import (
	"context"
	"time"

	"github.com/brain-template/brain/internal/page"
)

// AuthenticateKey resolves an API key; [Service.Flush] writes its last use.
func (s *Service) AuthenticateKey(ctx context.Context, key string) (*Identity, error) {
	if !looksLikeKey(key) {
		return nil, ErrUnauthenticated
	}
	now := s.cfg.Now()
	hash := hashSecret(key)
	c, _, err := s.lookupCached(ctx, s.keys, hash, now, func(*cached) (*cached, error) {
		k, u, err := s.store.APIKeyByHash(ctx, hash)
		if err != nil {
			return nil, err
		}
		return &cached{key: k, user: u, fetched: now}, nil
	}, func(stale *cached) {
		if stale != nil {
			delete(s.used, stale.key.ID)
		}
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.used[c.key.ID] = now.UTC().Truncate(time.Millisecond)
	s.mu.Unlock()
	return &Identity{User: c.user, Method: MethodAPIKey, APIKeyID: c.key.ID}, nil
}

// CreateAPIKey makes a key for the user and returns it with its secret.
func (s *Service) CreateAPIKey(ctx context.Context, userID, name string) (APIKey, string, error) {
	secret := newAPIKey()
	k := APIKey{ID: newID(), UserID: userID, Name: name, Prefix: secret[:len(KeyPrefix)+8], KeyHash: hashSecret(secret), CreatedAt: s.stamp()}
	if err := s.store.CreateAPIKey(ctx, k, s.cfg.MaxAPIKeys); err != nil {
		return APIKey{}, "", unavailable(err)
	}
	return k, secret, nil
}

// ListAPIKeys returns a page of the user's keys, newest first, and the
// next page's cursor (zero on the last).
func (s *Service) ListAPIKeys(ctx context.Context, userID string, after Cursor, limit int) (keys []APIKey, next Cursor, err error) {
	limit = max(limit, 1)
	keys, err = s.store.ListAPIKeys(ctx, userID, after, limit+1)
	if err != nil {
		return nil, Cursor{}, unavailable(err)
	}
	keys, next = page.Cut(keys, limit, func(k APIKey) Cursor { return Cursor{CreatedAt: k.CreatedAt, ID: k.ID} })
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range keys {
		if t, ok := s.used[keys[i].ID]; ok && t.After(keys[i].LastUsedAt) {
			keys[i].LastUsedAt = t
		}
	}
	return keys, next, nil
}

// DeleteAPIKey revokes one of the user's keys; ErrNotFound if not theirs.
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
