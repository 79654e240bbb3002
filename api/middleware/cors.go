package middleware

import (
	"net/http"

	"github.com/brain-template/brain/ratelimit"
	"github.com/go-chi/cors"
)

// exposedHeaders are the response headers browser clients may read.
var exposedHeaders = append([]string{ratelimit.HeaderRetryAfter, "X-Request-Id", "Location", "Idempotent-Replayed"}, ratelimit.HeaderNames...)

// CORS returns a middleware that lets the listed origins call the API from
// a browser, with credentials; with none it is a no-op.
func CORS(origins []string) func(http.Handler) http.Handler {
	if len(origins) == 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	return cors.Handler(cors.Options{
		AllowedOrigins:   origins,
		AllowedMethods:   []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"},
		AllowedHeaders:   []string{"Accept", "Content-Type", "Authorization", "X-API-Key", "X-Request-Id", "Last-Event-ID"},
		ExposedHeaders:   exposedHeaders,
		AllowCredentials: true,
		MaxAge:           600,
	})
}
