package middleware

import "net/http"

// CSRF returns a middleware that refuses an unsafe request a browser says
// is cross-origin (net/http's CrossOriginProtection: Sec-Fetch-Site, else
// Origin against Host), unless its origin is one of trustedOrigins; with a
// session cookie or without, so a hostile page cannot log a victim in to
// its own account either. Requests without those headers (curl) pass.
//
// exempt, when not nil, lets through the requests it reports true for:
// package api exempts those that send an API key, which a browser never
// attaches on its own. deny answers a refused request (nil: a bare 403).
// An origin that does not parse panics: it is configuration.
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
