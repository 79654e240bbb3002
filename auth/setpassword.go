package auth

import "context"

// SetPassword sets the password of username without asking for the old
// one, as an operator may (`brain user passwd`), and ends every session
// of the user, in one transaction: at once on this replica, within
// CacheTTL on others. The user's API keys are left alone. It returns
// ErrWeakPassword for a password out of bounds and ErrNotFound for an
// unknown user.
func (s *Service) SetPassword(ctx context.Context, username, password string) error {
	if n := len([]rune(password)); n < MinPasswordLen || n > MaxPasswordLen {
		return ErrWeakPassword
	}
	u, err := s.store.UserByUsername(ctx, NormalizeUsername(username))
	if err != nil {
		return err
	}
	var hash string
	if err := s.hashes.run(ctx, -1, false, func() { hash = HashPassword(password, s.cfg.Argon2) }); err != nil {
		return err
	}
	if err := s.store.SetPasswordAndEndSessions(ctx, u.ID, hash, ""); err != nil {
		return err
	}
	s.revoke(func() { s.forgetSessionsLocked(u.ID, "") })
	return nil
}

// forgetSessionsLocked drops the user's sessions but keep from this
// replica's cache, after the store ended them. s.mu is held.
func (s *Service) forgetSessionsLocked(userID, keep string) {
	for h, c := range s.sessions {
		if c.user.ID == userID && h != keep {
			delete(s.sessions, h)
		}
	}
}
