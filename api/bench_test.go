package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit"

	"github.com/brain-template/brain/api"
)

// BenchmarkRequest is one whole request through the server's middleware
// and huma: GET /api/v1/auth/me with a cached session, beside the same
// chain answering the public health check with no credentials.
func BenchmarkRequest(b *testing.B) {
	svc := MustAuth(b)
	token, _, _, err := svc.Login(context.Background(), "ada", "correct horse battery", "bench")
	if err != nil {
		b.Fatal(err)
	}
	// Budgets that never refuse: b.N requests of one session or address
	// would run out of the defaults (120/min a session) and measure 429s.
	l := api.DefaultLimits()
	l.Session = ratelimit.Rate{Limit: 1 << 30, Window: time.Second, Burst: 1 << 30}
	l.IP = l.Session
	s, _ := mustRawServer(b, api.Config{Auth: svc, Limits: l, Logger: slog.New(slog.DiscardHandler)})
	for _, bc := range []struct {
		name, path string
		cookie     bool
	}{
		{"health_anonymous", "/api/v1/health", false},
		{"me_session", "/api/v1/auth/me", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", bc.path, nil)
			if bc.cookie {
				req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: token})
			}
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// BenchmarkRateLimitOverhead is one request through the real handler chain
// (identity, limiter, headers, huma) with rate limiting on, beside the same
// request with it off: GET /api/v1/auth/me with an API key, in-process.
func BenchmarkRateLimitOverhead(b *testing.B) {
	for _, bc := range []struct {
		name     string
		disabled bool
	}{{"limiting_off", true}, {"limiting_on", false}} {
		b.Run(bc.name, func(b *testing.B) {
			svc := MustAuth(b)
			l := api.DefaultLimits()
			l.APIKey = ratelimit.Rate{Limit: 1 << 30, Window: time.Second, Burst: 1 << 30} // never refuses
			l.Disabled = bc.disabled
			s, _ := mustRawServer(b, api.Config{Auth: svc, Limits: l, Logger: slog.New(slog.DiscardHandler)})
			h := withKey(b, s, svc)
			req := httptest.NewRequest("GET", "/api/v1/auth/me", nil)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, req)
				if w.code != 200 || (w.h.Get("RateLimit") == "") != bc.disabled {
					b.Fatalf("status %d, RateLimit %q", w.code, w.h.Get("RateLimit"))
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps only the status and the
// headers, reused across iterations: unlike httptest.ResponseRecorder, it
// does not copy the header map on every response, which would bill the
// benchmark for the recorder's work.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

// BenchmarkDocuments serves the spec and the reference page, which are
// rendered once and then served from memory.
func BenchmarkDocuments(b *testing.B) {
	s := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: documented()})
	for _, path := range []string{"/openapi.json", "/docs"} {
		b.Run(path[1:], func(b *testing.B) {
			req := httptest.NewRequest("GET", path, nil)
			b.ReportAllocs()
			for b.Loop() {
				w := &discardWriter{h: http.Header{}}
				s.ServeHTTP(w, req)
				if w.code != 0 && w.code != 200 {
					b.Fatalf("status %d", w.code)
				}
			}
		})
	}
}
