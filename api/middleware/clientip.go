package middleware

import (
	"net/http"
	"net/netip"
	"slices"
	"strings"

	chimw "github.com/go-chi/chi/v5/middleware"
)

// ClientIP returns a middleware that stores the client's address for
// [GetClientIP] and [ClientKey]: the TCP peer, unless it is a trusted proxy;
// then the right-most untrusted X-Forwarded-For address.
func ClientIP(trusted []netip.Prefix) func(http.Handler) http.Handler {
	note := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s, r := state(r)
			a := chimw.GetClientIPAddr(r.Context())
			if !a.IsValid() && len(trusted) > 0 {
				a = forwardedFallback(r, trusted)
			}
			s.setIP(a)
			next.ServeHTTP(w, r)
		})
	}
	if len(trusted) == 0 {
		return func(next http.Handler) http.Handler { return chimw.ClientIPFromRemoteAddr(note(next)) }
	}
	cidrs := make([]string, len(trusted))
	for i, p := range trusted {
		cidrs[i] = p.String()
	}
	fromXFF := chimw.ClientIPFromXFF(cidrs...)
	return func(next http.Handler) http.Handler { return fromXFF(note(next)) }
}

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
