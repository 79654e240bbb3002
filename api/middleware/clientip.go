package middleware

import (
	"context"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	chimw "github.com/go-chi/chi/v5/middleware"
)

// ClientIP returns a middleware that stores the client's address for
// [GetClientIP]: the TCP peer, unless it is a trusted proxy; then the
// right-most untrusted X-Forwarded-For address.
func ClientIP(trusted []netip.Prefix) func(http.Handler) http.Handler {
	if len(trusted) == 0 {
		return chimw.ClientIPFromRemoteAddr
	}
	cidrs := make([]string, len(trusted))
	for i, p := range trusted {
		cidrs[i] = p.String()
	}
	fromXFF := chimw.ClientIPFromXFF(cidrs...)
	return func(next http.Handler) http.Handler {
		fallback := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !chimw.GetClientIPAddr(r.Context()).IsValid() {
				if a := forwardedFallback(r, trusted); a.IsValid() {
					r = r.WithContext(context.WithValue(r.Context(), clientIPKey, a))
				}
			}
			next.ServeHTTP(w, r)
		})
		return fromXFF(fallback)
	}
}

var clientIPKey = &contextKey{"client-ip"}

// forwardedFallback is the client where chi finds none, never the empty
// address all would share: the right-most untrusted entry read as
// address:port, else the left-most entry that parses, else the peer.
func forwardedFallback(r *http.Request, trusted []netip.Prefix) netip.Addr {
	var entries []netip.Addr
	for _, h := range r.Header.Values("X-Forwarded-For") {
		for _, e := range strings.Split(h, ",") {
			e = strings.TrimSpace(e)
			a, err := netip.ParseAddr(e)
			if err != nil {
				ap, perr := netip.ParseAddrPort(e)
				if perr != nil {
					continue
				}
				a = ap.Addr()
			}
			entries = append(entries, a.Unmap().WithZone(""))
		}
	}
	for _, a := range slices.Backward(entries) {
		if !slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(a) }) {
			return a
		}
	}
	if len(entries) > 0 {
		return entries[0]
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// GetClientIP returns the address [ClientIP] stored, or "".
func GetClientIP(ctx context.Context) string {
	if a := chimw.GetClientIPAddr(ctx); a.IsValid() {
		return a.String()
	}
	if a, ok := ctx.Value(clientIPKey).(netip.Addr); ok {
		return a.String()
	}
	return ""
}

// ClientKey is what the per-address limits count the client by: its
// address, or for IPv6 its /64.
func ClientKey(ctx context.Context) string {
	ip := GetClientIP(ctx)
	if a, err := netip.ParseAddr(ip); err == nil && a.Is6() {
		return netip.PrefixFrom(a.WithZone(""), 64).Masked().String()
	}
	return ip
}
