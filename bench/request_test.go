package bench_test

// Whole requests in process, brain's router beside a bare huma v2 + chi v5
// router answering the same bytes: what brain's middleware, auth, limits
// and access log cost a request, without the network (make bench-e2e
// measures it over loopback):
//
//	cd bench && go test -run '^$' -bench WholeRequest -benchmem -count 6 .

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth/account"
	"github.com/brain-template/brain/ratelimit"
)

// discardWriter keeps a response's status and headers, reused across
// iterations (httptest.ResponseRecorder would bill each for a copy of its
// header map).
type discardWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

func BenchmarkWholeRequest(b *testing.B) {
	db := apitest.OpenDB(b)
	svc := apitest.NewAuth(b, db)
	key := apitest.APIKey(b, svc)
	session, _, _, err := svc.Login(context.Background(), apitest.User, apitest.Password, "test")
	if err != nil {
		b.Fatal(err)
	}
	never := ratelimit.Rate{Limit: 1 << 30, Window: time.Second, Burst: 1 << 30}
	l := api.DefaultLimits()
	l.Session, l.IP, l.APIKey = never, never, never
	brain := api.New(api.Config{Auth: svc, Limits: l, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), // as cmd/brain logs
		Features: []api.Feature{account.Feature(svc, account.Config{})}})
	if err := brain.Err(); err != nil {
		b.Fatal(err)
	}
	targets := []struct {
		name, path string
		header     func(http.Header)
	}{
		{"health", "/api/v1/health", nil},
		{"me_apikey", "/api/v1/auth/me", func(h http.Header) { h.Set("Authorization", "Bearer "+key) }},
		{"me_session", "/api/v1/auth/me", func(h http.Header) { h.Set("Cookie", api.SessionCookie+"="+session) }},
	}
	answers := map[string][]byte{}
	for _, t := range targets {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, t.path, nil)
		if t.header != nil {
			t.header(req.Header)
		}
		brain.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("%s: %d %s", t.path, w.Code, w.Body)
		}
		answers[t.path] = w.Body.Bytes() // me's by session: the bare router has one answer a path, a few bytes longer than the key's
	}
	bare := bareRouter(answers)
	for _, t := range targets {
		for _, s := range []struct {
			name string
			h    http.Handler
		}{{"brain", brain}, {"bare", bare}} {
			b.Run(t.name+"/"+s.name, func(b *testing.B) {
				req := httptest.NewRequest(http.MethodGet, t.path, nil)
				req.RemoteAddr = "127.0.0.1:40000"
				if t.header != nil {
					t.header(req.Header)
				}
				w := &discardWriter{h: http.Header{}}
				b.ReportAllocs()
				for b.Loop() {
					clear(w.h)
					w.code = 0
					s.h.ServeHTTP(w, req)
					if w.code != 0 && w.code != 200 {
						b.Fatalf("status %d", w.code)
					}
				}
			})
		}
	}
}

// rawJSON is a bare operation's answer.
type rawJSON struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

// bareRouter is a huma v2 API on a chi v5 router with one GET per path,
// each answering its bytes.
func bareRouter(answers map[string][]byte) http.Handler {
	r := chi.NewMux()
	a := humachi.New(r, huma.DefaultConfig("bare", "1.0.0"))
	for path, body := range answers {
		huma.Register(a, huma.Operation{OperationID: "get" + path, Method: http.MethodGet, Path: path},
			func(context.Context, *struct{}) (*rawJSON, error) {
				return &rawJSON{ContentType: "application/json", Body: body}, nil
			})
	}
	return r
}
