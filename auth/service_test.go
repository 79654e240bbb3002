package auth_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// countingStore counts the calls a cache should spare.
type countingStore struct {
	auth.Store
	sessionLookups, touches, keyLookups, keyTouches atomic.Int32
}

func (c *countingStore) SessionByTokenHash(ctx context.Context, h string) (auth.Session, auth.User, error) {
	c.sessionLookups.Add(1)
	return c.Store.SessionByTokenHash(ctx, h)
}

func (c *countingStore) TouchSessions(ctx context.Context, seen map[string]time.Time) error {
	c.touches.Add(int32(len(seen)))
	return c.Store.TouchSessions(ctx, seen)
}

func (c *countingStore) TouchAPIKeys(ctx context.Context, used map[string]time.Time) error {
	c.keyTouches.Add(int32(len(used)))
	return c.Store.TouchAPIKeys(ctx, used)
}

func (c *countingStore) APIKeyByHash(ctx context.Context, h string) (auth.APIKey, auth.User, error) {
	c.keyLookups.Add(1)
	return c.Store.APIKeyByHash(ctx, h)
}

// cheap keeps tests fast; the real cost is DefaultArgon2.
var cheap = auth.Argon2Params{Memory: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}

type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) Advance(d time.Duration) { c.now = c.now.Add(d) }
func newClock() *clock                   { return &clock{now: t0} }
func mustService(t *testing.T) (*auth.Service, *countingStore, *clock) {
	t.Helper()
	st := &countingStore{Store: store.NewAuthStore(storetest.Open(t, store.SQLite))}
	clk := newClock()
	svc := auth.NewService(st, auth.Config{Argon2: cheap, Now: clk.Now, IdleTimeout: time.Hour, SessionLifetime: 24 * time.Hour})
	if _, err := svc.AddUser(context.Background(), "Ada", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	return svc, st, clk
}

func TestLogin(t *testing.T) {
	svc, _, _ := mustService(t)
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		token, se, u, err := svc.Login(ctx, " ADA ", "correct horse battery", "ip")
		if err != nil || u.Username != "ada" || len(token) != 43 || !se.ExpiresAt.Equal(t0.Add(24*time.Hour)) {
			t.Fatalf("Login = %q, %+v, %+v, %v", token, se, u, err)
		}
	})
	t.Run("ErrWrongPasswordLooksLikeUnknownUser", func(t *testing.T) {
		_, _, _, wrong := svc.Login(ctx, "ada", "wrong password!!", "ip")
		_, _, _, unknown := svc.Login(ctx, "nobody", "wrong password!!", "ip")
		if wrong != auth.ErrInvalidCredentials || unknown != auth.ErrInvalidCredentials {
			t.Fatalf("wrong password: %v; unknown user: %v; want the same ErrInvalidCredentials", wrong, unknown)
		}
	})
}

func TestSessions(t *testing.T) {
	svc, st, clk := mustService(t)
	ctx := context.Background()
	token, _, _, err := svc.Login(ctx, "ada", "correct horse battery", "ip")
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		id, err := svc.Authenticate(ctx, token)
		if err != nil || id.User.Username != "ada" || id.Method != auth.MethodSession {
			t.Fatalf("Authenticate = %+v, %v", id, err)
		}
	}
	if n := st.sessionLookups.Load(); n != 0 {
		t.Fatalf("50 requests looked the session up %d times, want 0 (the login cached it)", n)
	}
	if err := svc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := st.touches.Load(); n != 0 {
		t.Fatalf("touched %d times within the touch interval, want 0", n)
	}
	clk.Advance(2 * time.Minute) // past the cache TTL and the touch interval
	id, err := svc.Authenticate(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if st.sessionLookups.Load() != 1 || st.touches.Load() != 0 {
		t.Fatalf("lookups, touches = %d, %d; want 1, 0: the request itself never writes", st.sessionLookups.Load(), st.touches.Load())
	}
	if err := svc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := st.touches.Load(); n != 1 {
		t.Fatalf("Flush touched %d sessions, want the 1 due", n)
	}
	if se, _, _ := st.SessionByTokenHash(ctx, id.SessionHash); !se.LastSeenAt.Equal(clk.Now()) {
		t.Fatalf("stored last-seen time = %v after Flush, want %v", se.LastSeenAt, clk.Now())
	}

	t.Run("IdleTimeout", func(t *testing.T) {
		clk.Advance(time.Hour) // idle for the whole timeout
		if _, err := svc.Authenticate(ctx, token); err != auth.ErrUnauthenticated {
			t.Fatalf("after an idle hour: err = %v, want ErrUnauthenticated", err)
		}
	})
	t.Run("AbsoluteLifetime", func(t *testing.T) {
		token, _, _, _ := svc.Login(ctx, "ada", "correct horse battery", "ip")
		for range 24 * 3 { // busy every 20 minutes: never idle
			clk.Advance(20 * time.Minute)
			if _, err := svc.Authenticate(ctx, token); err != nil {
				break
			}
		}
		if _, err := svc.Authenticate(ctx, token); err != auth.ErrUnauthenticated {
			t.Fatalf("a busy session past its 24 h lifetime: err = %v", err)
		}
	})
	t.Run("Logout", func(t *testing.T) {
		token, _, _, _ := svc.Login(ctx, "ada", "correct horse battery", "ip")
		id, err := svc.Authenticate(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Logout(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Authenticate(ctx, token); err != auth.ErrUnauthenticated {
			t.Fatalf("right after logout (cache warm): err = %v", err)
		}
	})
	t.Run("Garbage", func(t *testing.T) {
		for _, tok := range []string{"", "x", token + "x", string(make([]byte, 43))} {
			if _, err := svc.Authenticate(ctx, tok); err != auth.ErrUnauthenticated {
				t.Errorf("Authenticate(%q) = %v", tok, err)
			}
		}
	})
}

func TestChangePasswordRevokesOtherSessions(t *testing.T) {
	svc, _, _ := mustService(t)
	ctx := context.Background()
	a, _, _, _ := svc.Login(ctx, "ada", "correct horse battery", "ip")
	b, _, _, _ := svc.Login(ctx, "ada", "correct horse battery", "ip")
	idA, _ := svc.Authenticate(ctx, a)
	if _, err := svc.Authenticate(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := svc.ChangePassword(ctx, idA, "ip", "not the password", "a new long passphrase"); err != auth.ErrInvalidCredentials {
		t.Fatalf("wrong current password: %v", err)
	}
	if err := svc.ChangePassword(ctx, idA, "ip", "correct horse battery", "short"); err != auth.ErrWeakPassword {
		t.Fatalf("short new password: %v", err)
	}
	if err := svc.ChangePassword(ctx, idA, "ip", "correct horse battery", "a new long passphrase"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, a); err != nil {
		t.Fatalf("the changing session must survive: %v", err)
	}
	if _, err := svc.Authenticate(ctx, b); err != auth.ErrUnauthenticated {
		t.Fatalf("the other session: err = %v, want it revoked", err)
	}
	if _, _, _, err := svc.Login(ctx, "ada", "a new long passphrase", "ip"); err != nil {
		t.Fatalf("login with the new password: %v", err)
	}
}

func TestAPIKeys(t *testing.T) {
	svc, st, clk := mustService(t)
	ctx := context.Background()
	u, _ := svc.AddUser(ctx, "grace", "another long password")
	k, secret, err := svc.CreateAPIKey(ctx, u.ID, "ci")
	if err != nil || len(secret) != 36 || secret[:4] != "brk_" || k.Prefix != secret[:12] {
		t.Fatalf("CreateAPIKey = %+v, %q, %v", k, secret, err)
	}
	for range 20 {
		id, err := svc.AuthenticateKey(ctx, secret)
		if err != nil || id.Method != auth.MethodAPIKey || id.User.ID != u.ID || id.APIKeyID != k.ID {
			t.Fatalf("AuthenticateKey = %+v, %v", id, err)
		}
	}
	if n := st.keyLookups.Load(); n != 1 {
		t.Fatalf("20 requests looked the key up %d times, want 1", n)
	}
	clk.Advance(time.Minute)
	used := clk.Now()
	if _, err := svc.AuthenticateKey(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if keys, _ := st.ListAPIKeys(ctx, u.ID, auth.Cursor{}, 10); !keys[0].LastUsedAt.IsZero() {
		t.Fatal("last-used was written per request; it should wait for Flush")
	}
	if keys, _, _ := svc.ListAPIKeys(ctx, u.ID, auth.Cursor{}, 10); !keys[0].LastUsedAt.Equal(used) {
		t.Fatalf("ListAPIKeys last used = %v, want the pending %v", keys[0].LastUsedAt, used)
	}
	if err := svc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, _ := st.ListAPIKeys(ctx, u.ID, auth.Cursor{}, 10); !keys[0].LastUsedAt.Equal(used) {
		t.Fatalf("after Flush the stored last use = %v, want %v", keys[0].LastUsedAt, used)
	}
	if err := svc.DeleteAPIKey(ctx, "someone-else", k.ID); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("deleting another's key: %v", err)
	}
	if err := svc.DeleteAPIKey(ctx, u.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AuthenticateKey(ctx, secret); err != auth.ErrUnauthenticated {
		t.Fatalf("deleted key (cache warm): err = %v", err)
	}
}

func TestEnsureAdmin(t *testing.T) {
	st := store.NewAuthStore(storetest.Open(t, store.SQLite))
	svc := auth.NewService(st, auth.Config{Argon2: cheap})
	ctx := context.Background()
	created, pw, err := svc.EnsureAdmin(ctx, "")
	if err != nil || !created || len(pw) < auth.MinPasswordLen {
		t.Fatalf("EnsureAdmin = %v, %q, %v; want a generated password", created, pw, err)
	}
	if _, _, _, err := svc.Login(ctx, "admin", pw, "ip"); err != nil {
		t.Fatalf("login as admin with the generated password: %v", err)
	}
	if created, _, _ := svc.EnsureAdmin(ctx, ""); created {
		t.Fatal("EnsureAdmin created a second admin")
	}
	if u, err := st.UserByUsername(ctx, "admin"); err != nil || !u.Admin {
		t.Fatalf("the user admin = %+v, %v; want the admin role", u, err)
	}
}

// Admin is a role: the first user ever created has it, whatever its
// name; a later one has it only through AddAdmin.
func TestAdminRole(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			st := store.NewAuthStore(storetest.Open(t, d))
			svc := auth.NewService(st, auth.Config{Argon2: cheap})
			ctx := context.Background()
			for _, c := range []struct {
				name  string
				add   func(context.Context, string, string) (auth.User, error)
				admin bool
			}{{"ada", svc.AddUser, true}, {"admin", svc.AddUser, false}, {"bob", svc.AddAdmin, true}, {"carol", svc.AddUser, false}} {
				u, err := c.add(ctx, c.name, "long enough password")
				if err != nil || u.Admin != c.admin {
					t.Fatalf("add %s = %+v, %v; want admin %v", c.name, u, err, c.admin)
				}
				if got, err := st.UserByID(ctx, u.ID); err != nil || got != u {
					t.Fatalf("%s as stored = %+v, %v; want %+v", c.name, got, err, u)
				}
			}
			if created, _, err := svc.EnsureAdmin(ctx, ""); created || err != nil {
				t.Fatalf("EnsureAdmin with users = %v, %v; want nothing created", created, err)
			}
		})
	}
}

func TestAddUserValidates(t *testing.T) {
	svc, _, _ := mustService(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, user, pw string
		want           error
	}{
		{"taken", "ADA", "long enough password", auth.ErrConflict},
		{"bad_chars", "a b", "long enough password", auth.ErrInvalidUsername},
		{"too_long", string(make([]byte, 65)), "long enough password", auth.ErrInvalidUsername},
		{"short_password", "bob", "short", auth.ErrWeakPassword},
	} {
		if _, err := svc.AddUser(ctx, tc.user, tc.pw); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// An unknown username costs a password hash like a wrong password does, so
// timing does not tell which usernames exist. With the real argon2 cost a
// missing dummy hash would make unknown users hundreds of times faster;
// the bound below leaves room for a noisy machine.
func TestUnknownUserCostsAHash(t *testing.T) {
	st := store.NewAuthStore(storetest.Open(t, store.SQLite))
	svc := auth.NewService(st, auth.Config{}) // DefaultArgon2
	ctx := context.Background()
	if _, err := svc.AddUser(ctx, "ada", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	took := func(user string, i int) time.Duration {
		start := time.Now()
		svc.Login(ctx, user, "wrong password", "ip"+strconv.Itoa(i))
		return time.Since(start)
	}
	// The fastest of three each, taken in turns, so that a loaded machine
	// slows both alike.
	wrong, unknown := time.Hour, time.Hour
	for i := range 3 {
		wrong, unknown = min(wrong, took("ada", i)), min(unknown, took("nobody", i))
	}
	if unknown < wrong/3 {
		t.Fatalf("unknown user took %v, wrong password %v: the unknown user skipped the hash", unknown, wrong)
	}
}

// Activity counts for the idle timeout at once, though the database hears
// of it at most once per touch interval.
func TestIdleTimeoutCountsEveryRequest(t *testing.T) {
	st := &countingStore{Store: store.NewAuthStore(storetest.Open(t, store.SQLite))}
	clk := newClock()
	svc := auth.NewService(st, auth.Config{Argon2: cheap, Now: clk.Now, IdleTimeout: 90 * time.Second})
	ctx := context.Background()
	svc.AddUser(ctx, "ada", "correct horse battery")
	token, _, _, _ := svc.Login(ctx, "ada", "correct horse battery", "ip")
	for i := range 20 { // a request every 50 s for 1000 s
		clk.Advance(50 * time.Second)
		if _, err := svc.Authenticate(ctx, token); err != nil {
			t.Fatalf("request %d at +%ds: %v; a session used every 50 s must not idle out at 90 s", i+1, (i+1)*50, err)
		}
	}
	clk.Advance(90 * time.Second)
	if _, err := svc.Authenticate(ctx, token); err != auth.ErrUnauthenticated {
		t.Fatalf("after 90 s of silence: %v", err)
	}
}

// blockingStore holds session lookups until released.
type blockingStore struct {
	auth.Store
	entered, release chan struct{}
}

func (b *blockingStore) SessionByTokenHash(ctx context.Context, h string) (auth.Session, auth.User, error) {
	se, u, err := b.Store.SessionByTokenHash(ctx, h)
	if b.entered != nil {
		b.entered <- struct{}{}
		<-b.release
	}
	return se, u, err
}

// A lookup in flight when the session is revoked must not put it back in
// the cache.
func TestLogoutRacingALookup(t *testing.T) {
	bs := &blockingStore{Store: store.NewAuthStore(storetest.Open(t, store.SQLite))}
	clk := newClock()
	svc := auth.NewService(bs, auth.Config{Argon2: cheap, Now: clk.Now})
	ctx := context.Background()
	svc.AddUser(ctx, "ada", "correct horse battery")
	token, _, _, _ := svc.Login(ctx, "ada", "correct horse battery", "ip")
	id, err := svc.Authenticate(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute) // the cached entry is stale: the next request reads the store
	bs.entered, bs.release = make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() { _, err := svc.Authenticate(ctx, token); done <- err }()
	<-bs.entered // the lookup has read the session, not yet cached it
	bs.entered = nil
	if err := svc.Logout(ctx, id); err != nil {
		t.Fatal(err)
	}
	close(bs.release)
	<-done
	if _, err := svc.Authenticate(ctx, token); err != auth.ErrUnauthenticated {
		t.Fatalf("after logout: %v; the racing lookup resurrected the session", err)
	}
}

// failingStore fails every user lookup with err while err is set.
type failingStore struct {
	auth.Store
	err error
}

func (f *failingStore) UserByUsername(ctx context.Context, name string) (auth.User, error) {
	if f.err != nil {
		return auth.User{}, f.err
	}
	return f.Store.UserByUsername(ctx, name)
}

// A store that fails is the server's trouble, not a wrong password: the
// error says ErrUnavailable and keeps its cause, and however many logins
// fail so, the right password works the moment the store is back. A caller
// who left is not an outage.
func TestLoginStoreFailure(t *testing.T) {
	down := errors.New("connection refused")
	st := &failingStore{Store: store.NewAuthStore(storetest.Open(t, store.SQLite)), err: down}
	svc := auth.NewService(st, auth.Config{Argon2: cheap, Now: newClock().Now})
	ctx := context.Background()
	if _, err := svc.AddUser(ctx, "ada", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 * svc.Throttle.UserFailures {
		if _, _, _, err := svc.Login(ctx, "ada", "correct horse battery", "ip"); !errors.Is(err, auth.ErrUnavailable) || !errors.Is(err, down) {
			t.Fatalf("login %d with the store down: %v, want ErrUnavailable wrapping the cause", i+1, err)
		}
	}
	st.err = context.Canceled
	if _, _, _, err := svc.Login(ctx, "ada", "correct horse battery", "ip"); errors.Is(err, auth.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("login whose caller left: %v, want context.Canceled unmarked", err)
	}
	st.err = nil
	if _, _, _, err := svc.Login(ctx, "ada", "correct horse battery", "ip"); err != nil {
		t.Fatalf("the right password once the store is back: %v; the outage counted as failed logins", err)
	}
}

// Password hashes run one per core at once by default; a login waits a
// second for a free slot.
func TestHashDefaults(t *testing.T) {
	cfg := auth.NewService(nil, auth.Config{Argon2: cheap}).Config()
	if cfg.HashConcurrency != runtime.GOMAXPROCS(0) || cfg.HashWait != time.Second {
		t.Fatalf("HashConcurrency, HashWait = %d, %v; want GOMAXPROCS (%d), 1s", cfg.HashConcurrency, cfg.HashWait, runtime.GOMAXPROCS(0))
	}
}
