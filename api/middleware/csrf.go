// This file refuses cross-site requests that change things.
package middleware

import "net/http"

// CSRF returns a middleware that refuses an unsafe request when a browser
// says it is cross-origin (Sec-Fetch-Site, else Origin against Host; net/
// http's CrossOriginProtection), unless the origin is one of
// trustedOrigins: for requests that carry a session cookie, and for
// anonymous ones, so a hostile page cannot log a victim in to its own
// account either. Requests without those headers (curl, servers) pass.
//
// exempt, when not nil, lets through the requests it reports true for
// without the check: package api exempts those that send an API key, which
// a browser never attaches on its own. deny answers a refused request
// (package api gives its 403 envelope; nil: a bare 403). An origin that
// does not parse panics: it is configuration, checked at start.
func CSRF(trustedOrigins []string, exempt func(*http.Request) bool, deny http.Handler) func(http.Handler) http.Handler {
	c := newCSRF(trustedOrigins, exempt, deny)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c.refused(w, r) {
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// csrf is [CSRF]'s check.
type csrf struct {
	cop    *http.CrossOriginProtection
	exempt func(*http.Request) bool
	deny   http.Handler
}

func newCSRF(trustedOrigins []string, exempt func(*http.Request) bool, deny http.Handler) *csrf {
	cop := http.NewCrossOriginProtection()
	for _, o := range trustedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			panic("middleware: CSRF: " + err.Error())
		}
	}
	return &csrf{cop, exempt, orStatus(deny, http.StatusForbidden)}
}

// refused answers r with deny and reports true if r is refused.
func (c *csrf) refused(w http.ResponseWriter, r *http.Request) bool {
	if c.cop.Check(r) == nil || c.exempt != nil && c.exempt(r) {
		return false
	}
	c.deny.ServeHTTP(w, r)
	return true
}
