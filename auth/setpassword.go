package auth

import "context"

// SetPassword sets the password of username without asking for the old
// one, as an operator may (`brain user passwd`), and ends every session
// of the user: at once on this replica, within CacheTTL on others. The
// user's API keys are left alone. It returns ErrWeakPassword for a
// password out of bounds and ErrNotFound for an unknown user.
func (s *Service) SetPassword(ctx context.Context, username, password string) error {
	if n := len([]rune(password)); n < MinPasswordLen || n > MaxPasswordLen {
		return ErrWeakPassword
	}
	u, err := s.store.UserByUsername(ctx, NormalizeUsername(username))
	if err != nil {
		return err
	}
	if err := s.store.SetPasswordHash(ctx, u.ID, HashPassword(password, s.cfg.Argon2)); err != nil {
		return err
	}
	s.revoked()
	err = s.store.DeleteUserSessions(ctx, u.ID, "")
	s.mu.Lock()
	for h, c := range s.sessions {
		if c.user.ID == u.ID {
			delete(s.sessions, h)
		}
	}
	s.mu.Unlock()
	return err
}
