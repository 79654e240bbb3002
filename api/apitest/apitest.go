// Package apitest is the harness a feature's tests use, and api's own: a
// whole server with the feature on a real port, a database in a temp dir
// and the user ada; JSON calls, or bodies sent as they are, and their
// replies read in full; sessions, API keys, streams read event by event,
// /metrics, and a clock that moves when told.
package apitest

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/auth/account"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
	"github.com/brain-template/brain/streams"
)

// User and Password are the user every [NewAuth] service has.
const (
	User     = "ada"
	Password = "correct horse battery"
)

// Argon2 keeps password hashing fast in tests.
var Argon2 = auth.Argon2Params{Memory: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}

// A Clock is a time that moves only when told ([Clock.Advance]); give
// its Now to api.Config.Now, a limiter's Now or a feature's.
type Clock = testclock.Clock

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return testclock.New(start) }

// OpenDB returns an empty, migrated SQLite database in a temp dir,
// closed when the test ends.
func OpenDB(tb testing.TB) *store.DB {
	tb.Helper()
	return storetest.Open(tb, store.SQLite)
}

// NewAuth returns an auth service on db with the user [User].
func NewAuth(tb testing.TB, db *store.DB) *auth.Service {
	tb.Helper()
	svc := auth.NewService(store.NewAuthStore(db), auth.Config{Argon2: Argon2})
	if _, err := svc.AddUser(context.Background(), User, Password); err != nil {
		tb.Fatal(err)
	}
	return svc
}

// APIKey returns a new API key of [User]'s on svc.
func APIKey(tb testing.TB, svc *auth.Service) string {
	tb.Helper()
	ctx := context.Background()
	_, _, u, err := svc.Login(ctx, User, Password, "test")
	if err != nil {
		tb.Fatal(err)
	}
	_, key, err := svc.CreateAPIKey(ctx, u.ID, "test")
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

// A Server is an api.Server served on a real port until the test ends,
// with the [Client] that calls it (every call times out after 60 s).
type Server struct {
	*api.Server
	*Client
	// Streams is the stream plane the server serves ([Streams]).
	Streams *streams.Runtime
	// Auth is the server's, as [Start] completed it.
	Auth *auth.Service
	// Logs is what the server logged, when Config.Logger was nil.
	Logs *Logs
}

// An Option changes what [Start] serves: [Streams], [HTTPServer].
type Option func(*options)

type options struct {
	streams streams.Config
	srv     []func(*httptest.Server)
}

// Streams serves the stream plane of sc, its zero fields completed as
// [Start] says, in place of the default one.
func Streams(sc streams.Config) Option { return func(o *options) { o.streams = sc } }

// HTTPServer gives f the unstarted server first: to set its timeouts,
// say, or serve HTTP/2 over TLS (EnableHTTP2).
func HTTPServer(f func(*httptest.Server)) Option {
	return func(o *options) { o.srv = append(o.srv, f) }
}

// Start serves cfg on a port of its own until the test ends, completing
// it as brain does: an auth service with ada when Auth is nil, the account
// operations first, a logger into [Server.Logs], the stream plane last
// (in memory, a 50 ms heartbeat), and budgets no test meets for those
// left zero. Streams are closed before the server.
func Start(tb testing.TB, cfg api.Config, opts ...Option) *Server {
	tb.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if cfg.Auth == nil {
		cfg.Auth = NewAuth(tb, OpenDB(tb))
	}
	logs := &Logs{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	if o.streams.Hub == nil {
		o.streams.Hub = streams.NewMemoryHub(1024, 64)
	}
	if o.streams.Heartbeat == 0 {
		o.streams.Heartbeat = 50 * time.Millisecond
	}
	plane := streams.New(o.streams)
	cfg.Features = slices.Concat([]api.Feature{account.Feature(cfg.Auth, account.Config{Hub: plane.Hub()})}, cfg.Features, []api.Feature{plane.Feature})
	for _, b := range []*ratelimit.Rate{&cfg.Limits.Session, &cfg.Limits.APIKey, &cfg.Limits.StreamOpens, &cfg.Limits.StreamUserOpens} {
		if *b == (ratelimit.Rate{}) {
			*b = ratelimit.Rate{Limit: 10_000, Window: time.Minute, Burst: 10_000}
		}
	}
	s := api.New(cfg)
	if err := s.Err(); err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(s)
	for _, f := range o.srv {
		f(hs)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 512}
	if hs.EnableHTTP2 {
		hs.StartTLS()
		tr = hs.Client().Transport.(*http.Transport)
	} else {
		hs.Start()
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := plane.CloseStreams(ctx); err != nil {
			tb.Errorf("streams still open 10 s after CloseStreams: %v", err)
		}
		hs.Close()
	})
	tb.Cleanup(tr.CloseIdleConnections)
	return &Server{Server: s, Client: newClient(tb, hs.URL, &http.Client{Transport: tr, Timeout: 60 * time.Second}),
		Streams: plane, Auth: cfg.Auth, Logs: logs}
}

// Session logs [User] in and returns the session's "Cookie: ..." header.
func (s *Server) Session() string {
	s.tb.Helper()
	return s.Login(User, Password).Cookie(s.tb)
}

// Key returns the "X-API-Key: ..." header of a new API key of [User]'s.
func (s *Server) Key() string {
	s.tb.Helper()
	return "X-API-Key: " + APIKey(s.tb, s.Auth)
}

// Logs is a log sink safe for the server's goroutines.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Eventually retries f every 10 ms for up to d, failing the test with
// what if it never returns true.
func Eventually(tb testing.TB, d time.Duration, what string, f func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(d); !f(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %s", d, what)
		}
	}
}
