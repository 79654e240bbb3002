package auth

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"
)

// Password bounds.
const (
	MinPasswordLen = 12
	MaxPasswordLen = 1024
)

var usernameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

func checkPassword(pw string) error {
	if n := len([]rune(pw)); n < MinPasswordLen || n > MaxPasswordLen {
		return ErrWeakPassword
	}
	return nil
}

// NormalizeUsername lower-cases and trims a username.
func NormalizeUsername(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// passwordChangeTimeout bounds a password change's write, which outlives the caller.
const passwordChangeTimeout = 10 * time.Second

// AddUser creates a user, an admin when it is the first.
func (s *Service) AddUser(ctx context.Context, username, password string) (User, error) {
	return s.addUser(ctx, username, password, false)
}

// AddAdmin creates a user with the admin role.
func (s *Service) AddAdmin(ctx context.Context, username, password string) (User, error) {
	return s.addUser(ctx, username, password, true)
}

func (s *Service) addUser(ctx context.Context, username, password string, admin bool) (User, error) {
	username = NormalizeUsername(username)
	if !usernameRE.MatchString(username) {
		return User{}, ErrInvalidUsername
	}
	if err := checkPassword(password); err != nil {
		return User{}, err
	}
	n, err := s.store.CountUsers(ctx)
	if err != nil {
		return User{}, unavailable(err)
	}
	u := User{ID: newID(), Username: username, CreatedAt: s.stamp(), Admin: admin || n == 0}
	if err := s.hashes.run(ctx, -1, false, func() { u.PasswordHash = HashPassword(password, s.cfg.Argon2) }); err != nil {
		return User{}, err
	}
	if err := s.store.CreateUser(ctx, u); err != nil {
		return User{}, unavailable(err)
	}
	return u, nil
}

// EnsureAdmin creates the user admin when there are no users, with
// password or a random one it returns.
func (s *Service) EnsureAdmin(ctx context.Context, password string) (created bool, generated string, err error) {
	n, err := s.store.CountUsers(ctx)
	if err != nil || n > 0 {
		return false, "", unavailable(err)
	}
	if password == "" {
		password = newToken()[:24]
		generated = password
	}
	if _, err := s.AddAdmin(ctx, "admin", password); err != nil {
		if errors.Is(err, ErrConflict) { // another replica won
			return false, "", nil
		}
		return false, "", err
	}
	return true, generated, nil
}

// ChangePassword checks current, then sets next and ends the user's other
// sessions in one write. A wrong current password counts as a failed login.
func (s *Service) ChangePassword(ctx context.Context, id *Identity, clientIP, current, next string) error {
	if err := checkPassword(next); err != nil {
		return err
	}
	attempt, err := s.Backoff.Begin(ctx, id.User.Username, clientIP, s.cfg.Now())
	if err != nil {
		return err
	}
	u, err := s.store.UserByID(ctx, id.User.ID)
	if err != nil {
		s.Backoff.Abandon(attempt)
		return unavailable(err)
	}
	var ok bool
	var hash string
	err = s.hashes.run(ctx, s.cfg.HashWait, attempt.failing, func() {
		if ok = verifyPassword(current, u.PasswordHash); ok {
			hash = HashPassword(next, s.cfg.Argon2)
		}
	})
	if err != nil {
		s.Backoff.Abandon(attempt)
		return unavailable(err)
	}
	if !ok {
		s.Backoff.Fail(attempt)
		return ErrInvalidCredentials
	}
	s.Backoff.Succeed(attempt)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), passwordChangeTimeout)
	defer cancel()
	if err := s.store.SetPasswordAndEndSessions(wctx, u.ID, hash, id.SessionHash); err != nil {
		return unavailable(err)
	}
	s.revoke(func() { s.forgetSessionsLocked(u.ID, id.SessionHash) })
	return nil
}

// SetPassword sets username's password and ends all their sessions.
func (s *Service) SetPassword(ctx context.Context, username, password string) error {
	if err := checkPassword(password); err != nil {
		return err
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

// forgetSessionsLocked drops the user's cached sessions but keep.
func (s *Service) forgetSessionsLocked(userID, keep string) {
	for h, c := range s.sessions {
		if c.user.ID == userID && h != keep {
			delete(s.sessions, h)
		}
	}
}
