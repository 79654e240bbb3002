package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/brain-template/brain/api/middleware"
)

// NoSniff sets its header before the handler runs, so whatever the
// handler writes (an error included) carries it.
func TestNoSniff(t *testing.T) {
	h := middleware.NoSniff(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "<script>", http.StatusNotFound)
	}))
	rec := serve(h, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 404 || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("%d, X-Content-Type-Options %q; want 404 with nosniff", rec.Code, rec.Header().Get("X-Content-Type-Options"))
	}
}
