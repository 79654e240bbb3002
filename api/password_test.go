package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

const (
	oldPassword = "correct horse battery"
	newPassword = "a brand new password"
)

// lookupSignal is a real store that tells when a user lookup by id (the
// start of a password change) has returned.
type lookupSignal struct {
	auth.Store
	looked chan struct{}
}

func (l *lookupSignal) UserByID(ctx context.Context, id string) (auth.User, error) {
	u, err := l.Store.UserByID(ctx, id)
	select {
	case l.looked <- struct{}{}:
	default:
	}
	return u, err
}

// changeSetup is a server over db with user ada logged in twice: a is the
// session that changes the password, b another browser. replica is a
// second service on the same database that caches nothing: what it sees
// is what the database holds.
type changeSetup struct {
	s       *apitest.Client
	replica *auth.Service
	a, b    string // Cookie headers
	userID  string
	looked  chan struct{}
	// watched, when set, is the next password change's: done when its
	// context is, served when its handler has returned.
	watched chan watch
}

type watch struct{ ctxDone, served chan struct{} }

// watch arms the watch of the next password change.
func (c *changeSetup) watch() watch {
	w := watch{make(chan struct{}), make(chan struct{})}
	c.watched <- w
	return w
}

func newChangeSetup(t *testing.T, db *store.DB, username string) *changeSetup {
	t.Helper()
	c := &changeSetup{looked: make(chan struct{}, 1), watched: make(chan watch, 1)}
	st := &lookupSignal{Store: store.NewAuthStore(db), looked: c.looked}
	svc := auth.NewService(st, auth.Config{Argon2: cheap})
	u, err := svc.AddUser(t.Context(), username, oldPassword)
	if err != nil {
		t.Fatal(err)
	}
	c.userID = u.ID
	server := api.New(withAccount(api.Config{Auth: svc, Logger: slog.New(slog.DiscardHandler)}))
	c.s = apitest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case w := <-c.watched:
			go func() { <-r.Context().Done(); close(w.ctxDone) }()
			defer close(w.served)
		default:
		}
		server.ServeHTTP(w, r)
	}))
	c.a = c.s.Login(username, oldPassword).Want(t, 200, "login a").Cookie(t)
	c.b = c.s.Login(username, oldPassword).Want(t, 200, "login b").Cookie(t)
	c.replica = auth.NewService(store.NewAuthStore(db), auth.Config{Argon2: cheap, CacheTTL: time.Nanosecond})
	return c
}

// change asks, from session a, to change the password to newPassword.
func (c *changeSetup) change(ctx context.Context) (apitest.Reply, error) {
	return c.s.CallContext(ctx, "POST", "/api/v1/auth/password", map[string]string{"current": oldPassword, "new": newPassword}, c.a)
}

// alive reports whether the database still holds the session of cookie.
func (c *changeSetup) alive(t *testing.T, cookie string) bool {
	t.Helper()
	_, err := c.replica.Authenticate(t.Context(), strings.TrimPrefix(cookie, "Cookie: brain_session="))
	if err != nil && err != auth.ErrUnauthenticated {
		t.Fatal(err)
	}
	return err == nil
}

// wantWhole fails the test unless exactly password logs username in,
// and session b is alive exactly when the password is the old one: the
// state before the change, or the state after it, never half of each.
func (c *changeSetup) wantWhole(t *testing.T, username, password string) {
	t.Helper()
	other := map[string]string{oldPassword: newPassword, newPassword: oldPassword}[password]
	c.s.Login(username, password).Want(t, 200, "the password in force")
	c.s.Login(username, other).Want(t, 401, "the other password")
	if b := c.alive(t, c.b); b != (password == oldPassword) {
		t.Fatalf("password %q in force and the other session alive = %v: half a change", password, b)
	}
	if !c.alive(t, c.a) {
		t.Fatal("the session that changed the password was ended")
	}
}

// A password change is one change: the new password with the end of the
// other sessions. A failure in its second step leaves the old password
// and every session; a client that leaves half-way does not stop it.
func TestPasswordChangeIsWhole(t *testing.T) {
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		t.Run("ErrEndingSessionsFails", func(t *testing.T) {
			c := newChangeSetup(t, db, "ada")
			undo := failDeletes(t, db)
			r, err := c.change(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			r.WantUnavailable(t, "a change whose second step fails")
			undo()
			c.wantWhole(t, "ada", oldPassword)

			if r, err := c.change(t.Context()); err != nil || r.Status != 204 {
				t.Fatalf("the change retried: %v %d %s", err, r.Status, r.Body)
			}
			c.wantWhole(t, "ada", newPassword)
		})

		t.Run("ClientLeaves", func(t *testing.T) {
			c := newChangeSetup(t, db, "grace")
			release := holdWrites(t, db, c.userID)
			w := c.watch()
			ctx, cancel := context.WithCancel(context.Background())
			sent := make(chan error, 1)
			go func() { _, err := c.change(ctx); sent <- err }()
			<-c.looked // the server is past its lookup, on its way to the (held) write
			cancel()
			<-sent
			<-w.ctxDone // the server saw the client go
			release()
			<-w.served
			c.wantWhole(t, "grace", newPassword)
		})
	})
}
