package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/brain-template/brain/api/middleware"
)

func TestRequestID(t *testing.T) {
	var inCtx string
	h := middleware.RequestID(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		inCtx = middleware.GetRequestID(r.Context())
	}))
	fresh := regexp.MustCompile(`^[0-9a-f]{16}$`)
	tests := []struct {
		name, in string
		keep     bool
	}{
		{"kept", "abc-123_x.y", true},
		{"kept_64", strings.Repeat("a", 64), true},
		{"absent", "", false},
		{"too_long", strings.Repeat("a", 65), false},
		{"bad_chars", "a b<script>", false},
		{"non_ascii", "café", false},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/", nil)
			if tc.in != "" {
				req.Header.Set("X-Request-Id", tc.in)
			}
			got := serve(h, req).Header().Get("X-Request-Id")
			if got != inCtx {
				t.Fatalf("X-Request-Id %q, but the context holds %q", got, inCtx)
			}
			if tc.keep && got != tc.in {
				t.Fatalf("X-Request-Id = %q, want %q kept", got, tc.in)
			}
			if !tc.keep && (!fresh.MatchString(got) || seen[got]) {
				t.Fatalf("X-Request-Id = %q, want a fresh 16-hex id", got)
			}
			seen[got] = true
		})
	}
	if id := middleware.GetRequestID(context.Background()); id != "" {
		t.Fatalf("GetRequestID outside a request = %q, want \"\"", id)
	}
}
