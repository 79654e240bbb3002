package middleware_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/brain-template/brain/api/middleware"
	"github.com/go-chi/chi/v5"
)

// The middleware mounts on any chi router, one by one or all in order
// (Chain), as package api mounts it, with its error envelope as the
// answers.
func Example() {
	r := chi.NewRouter()
	r.Use(middleware.Chain(middleware.Config{Logger: slog.New(slog.DiscardHandler), Now: time.Now})...)
	r.Get("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s, request %s", middleware.GetClientIP(r.Context()), middleware.GetRequestID(r.Context()))
	})

	req := httptest.NewRequest("GET", "/hello", nil)
	req.RemoteAddr = "203.0.113.9:4444"
	req.Header.Set("X-Request-Id", "trace-1")
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	fmt.Println(rec.Body.String())
	fmt.Println(rec.Header().Get("X-Content-Type-Options"))
	// Output:
	// hello 203.0.113.9, request trace-1
	// nosniff
}
