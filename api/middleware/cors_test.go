package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brain-template/brain/api/middleware"
)

func TestCORS(t *testing.T) {
	reached := false
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })
	h := middleware.CORS([]string{"https://app.example.com"})(ok)
	preflight := func(h http.Handler, origin string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("OPTIONS", "/api/v1/apikeys", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type, x-api-key, last-event-id")
		return serve(h, req)
	}

	reached = false
	rec := preflight(h, "https://app.example.com")
	if rec.Code >= 300 || reached || rec.Header().Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		rec.Header().Get("Access-Control-Allow-Credentials") != "true" || !strings.Contains(rec.Header().Get("Access-Control-Allow-Methods"), "POST") ||
		rec.Header().Get("Access-Control-Max-Age") != "600" {
		t.Fatalf("preflight from a listed origin (reached the handler: %v): %d %v", reached, rec.Code, rec.Header())
	}
	if got := strings.ToLower(rec.Header().Get("Access-Control-Allow-Headers")); !strings.Contains(got, "x-api-key") || !strings.Contains(got, "last-event-id") {
		t.Errorf("Access-Control-Allow-Headers %q lacks X-API-Key or Last-Event-ID", got)
	}
	if bad := preflight(h, "https://evil.example"); bad.Header().Get("Access-Control-Allow-Origin") != "" || bad.Header().Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("preflight from an unlisted origin was allowed: %v", bad.Header())
	}

	req := httptest.NewRequest("GET", "/api/v1/health", nil)
	req.Header.Set("Origin", "https://app.example.com")
	reached = false
	rec = serve(h, req)
	if !reached {
		t.Fatal("a simple cross-origin GET did not reach the handler")
	}
	exposed := strings.ToLower(rec.Header().Get("Access-Control-Expose-Headers"))
	for _, name := range []string{"Retry-After", "Ratelimit", "Ratelimit-Policy", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "X-Request-Id", "Location", "Idempotent-Replayed"} {
		if !strings.Contains(exposed, strings.ToLower(name)) {
			t.Errorf("Access-Control-Expose-Headers %q lacks %s", exposed, name)
		}
	}

	// Without origins, the handler is served as is: nothing cross-origin.
	none := middleware.CORS(nil)(ok)
	if rec := preflight(none, "https://app.example.com"); rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("CORS with no origins allowed one: %v", rec.Header())
	}
}
