package middleware

import "net/http"

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
