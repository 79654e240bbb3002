// Package apitest is the harness of features' tests and api's own: a whole
// server on a real port with a temp database and the user ada, and a client
// for JSON calls, raw bodies, streams and /metrics.
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

// A Clock is a time that moves only when told ([Clock.Advance]).
type Clock = testclock.Clock

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return testclock.New(start) }

// OpenDB returns an empty, migrated SQLite database in a temp dir.
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
// with the [Client] that calls it.
type Server struct {
	*api.Server
	*Client
	Streams *streams.Runtime // the streams runtime the server serves
	Auth    *auth.Service
	Logs    *Logs // what the server logged, when Config.Logger was nil
}

// An Option changes what [Start] serves: [Streams], [HTTPServer].
type Option func(*options)

type options struct {
	streams streams.Config
	srv     []func(*httptest.Server)
}

// Streams serves the stream plane of sc in place of the default one.
func Streams(sc streams.Config) Option { return func(o *options) { o.streams = sc } }

// HTTPServer gives f the unstarted server first (timeouts, EnableHTTP2).
func HTTPServer(f func(*httptest.Server)) Option {
	return func(o *options) { o.srv = append(o.srv, f) }
}

// Start serves cfg on a port of its own until the test ends, completed as
// brain does: auth with ada, the account operations, the stream plane (in
// memory, 50 ms heartbeat), and budgets no test meets for those left zero.
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
		o.streams.Heartbeat = 200 * time.Millisecond // a write deadline of 400 ms: room for a loaded machine
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
	client := &Client{URL: hs.URL, HTTP: &http.Client{Transport: tr, Timeout: 60 * time.Second}, tb: tb}
	return &Server{Server: s, Client: client, Streams: plane, Auth: cfg.Auth, Logs: logs}
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

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Eventually retries f every 10 ms for up to d, failing the test if it never returns true.
func Eventually(tb testing.TB, d time.Duration, what string, f func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(d); !f(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %s", d, what)
		}
	}
}
