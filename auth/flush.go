// The Service's writes outside a request: the queued last-use and
// last-seen times (Flush), and the loop that flushes them and deletes dead
// sessions (Run).

package auth

import (
	"context"
	"errors"
	"time"
)

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
