package api

import (
	"context"
	"net/http"
	"net/netip"

	"github.com/go-chi/chi/v5/middleware"
)

// ClientIP returns a middleware that stores the client's address for
// [GetClientIP]: the TCP peer, unless the peer is a trusted proxy; then the
// right-most X-Forwarded-For address that is not itself trusted. It is
// chi's ClientIPFromXFF (never the spoofable left-most entry, never the
// deprecated RealIP), or ClientIPFromRemoteAddr when nothing is trusted.
func ClientIP(trusted []netip.Prefix) func(http.Handler) http.Handler {
	if len(trusted) == 0 {
		return middleware.ClientIPFromRemoteAddr
	}
	cidrs := make([]string, len(trusted))
	for i, p := range trusted {
		cidrs[i] = p.String()
	}
	return middleware.ClientIPFromXFF(cidrs...)
}

// GetClientIP returns the address [ClientIP] stored: what the per-IP
// limits and the login throttle key on. It is "" when the peer address did
// not parse (fail-closed).
func GetClientIP(ctx context.Context) string { return middleware.GetClientIP(ctx) }
