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

// CSRF returns a middleware that refuses (with deny; nil: a bare 403) an
// unsafe cross-origin request (net/http's CrossOriginProtection) unless its
// origin is trusted or exempt reports true for it.
func CSRF(trustedOrigins []string, exempt func(*http.Request) bool, deny http.Handler) func(http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	for _, o := range trustedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			panic("middleware: CSRF: " + err.Error())
		}
	}
	deny = orStatus(deny, http.StatusForbidden)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if cop.Check(r) != nil && (exempt == nil || !exempt(r)) {
				deny.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
