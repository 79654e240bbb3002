package api

import (
	"context"
	"net/http"
	"net/netip"
	"strings"

	"github.com/go-chi/chi/v5/middleware"
)

// ClientIP returns a middleware that stores the client's address for
// [GetClientIP]: the TCP peer, unless the peer is a trusted proxy; then the
// right-most X-Forwarded-For address that is not itself trusted. It is
// chi's ClientIPFromXFF (never the spoofable left-most entry, never the
// deprecated RealIP), or ClientIPFromRemoteAddr when nothing is trusted.
//
// A trusted peer that sends no X-Forwarded-For at all (a health checker
// inside the proxy's network, a sidecar) is itself the client: its own
// address is used, so such callers do not all share the empty address.
func ClientIP(trusted []netip.Prefix) func(http.Handler) http.Handler {
	if len(trusted) == 0 {
		return middleware.ClientIPFromRemoteAddr
	}
	cidrs := make([]string, len(trusted))
	for i, p := range trusted {
		cidrs[i] = p.String()
	}
	fromXFF := middleware.ClientIPFromXFF(cidrs...)
	return func(next http.Handler) http.Handler {
		withXFF, peerOnly := fromXFF(next), middleware.ClientIPFromRemoteAddr(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if forwarded(r) {
				withXFF.ServeHTTP(w, r)
			} else {
				peerOnly.ServeHTTP(w, r)
			}
		})
	}
}

// forwarded reports whether r has an X-Forwarded-For entry that is not
// blank.
func forwarded(r *http.Request) bool {
	for _, v := range r.Header.Values("X-Forwarded-For") {
		if strings.Trim(v, " \t,") != "" {
			return true
		}
	}
	return false
}

// GetClientIP returns the address [ClientIP] stored: what the per-IP
// limits and the login throttle key on. It is "" when the peer address did
// not parse or a trusted proxy's X-Forwarded-For did not (fail-closed).
func GetClientIP(ctx context.Context) string { return middleware.GetClientIP(ctx) }
