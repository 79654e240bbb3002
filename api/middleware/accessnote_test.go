package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api/middleware"
)

// The access line names the client address ClientIP noted and the
// user NoteUser noted, though both are learned inside the access log.
func TestAccessNotes(t *testing.T) {
	l, logs := newLogger()
	user := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-User") != "" {
			middleware.NoteUser(r.Context(), r.Header.Get("X-User"))
		}
	})
	h := middleware.AccessLog(l, time.Now, nil)(middleware.ClientIP(nil)(user))

	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "203.0.113.9:4444"
	req.Header.Set("X-User", "u_123")
	serve(h, req)
	if line := logs.line("request"); !strings.Contains(line, "ip=203.0.113.9") || !strings.Contains(line, "user=u_123") {
		t.Fatalf("access line %q lacks the noted ip or user", line)
	}

	// Outside the access log, noting is harmless.
	middleware.NoteUser(context.Background(), "u_1")
	rec := serve(middleware.ClientIP(nil)(http.NotFoundHandler()), httptest.NewRequest("GET", "/", nil))
	if rec.Code != 404 {
		t.Fatalf("ClientIP outside the access log: %d", rec.Code)
	}
}
