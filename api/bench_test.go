package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/brain-template/brain/api"
)

// BenchmarkAuthenticate is the auth middleware alone, resolving a session
// from its cache: what every cookie-authenticated request pays.
func BenchmarkAuthenticate(b *testing.B) {
	svc := MustAuth(b)
	token, _, _, err := svc.Login(context.Background(), "ada", "correct horse battery", "bench")
	if err != nil {
		b.Fatal(err)
	}
	h := api.Authenticate(svc)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	req := httptest.NewRequest("GET", "/api/v1/auth/me", nil)
	req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: token})
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
}

// BenchmarkRequest is one whole request through the server's middleware
// and huma: GET /api/v1/auth/me with a cached session, beside the same
// chain answering the public health check with no credentials.
func BenchmarkRequest(b *testing.B) {
	svc := MustAuth(b)
	token, _, _, err := svc.Login(context.Background(), "ada", "correct horse battery", "bench")
	if err != nil {
		b.Fatal(err)
	}
	s, _ := mustRawServer(b, api.Config{Auth: svc, Logger: slog.New(slog.DiscardHandler)})
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
