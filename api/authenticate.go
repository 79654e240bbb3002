package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/brain-template/brain/auth"
)

// resolveCaller returns the caller r authenticates as, from an API key
// (Authorization: Bearer brk_... or X-API-Key) or else the session cookie:
// nil and auth.ErrUnauthenticated for credentials the store does not
// know, nil and nil for a request with none. Any other error means the
// store could not say. Only operations that need a caller resolve it, so
// credentials sent to public routes cost nothing.
func resolveCaller(ctx context.Context, svc *auth.Service, r *http.Request) (*auth.Identity, error) {
	if svc == nil {
		return nil, nil
	}
	if key := apiKeyFrom(r); key != "" {
		return svc.AuthenticateKey(ctx, key)
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		return svc.Authenticate(ctx, c.Value)
	}
	return nil, nil
}

func apiKeyFrom(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if scheme, key, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(key)
		}
	}
	return r.Header.Get("X-API-Key")
}

// CSRF is a middleware that refuses (403) an unsafe request when a browser
// says it is cross-origin (Sec-Fetch-Site, else Origin against Host), unless
// the origin is one of the trusted CORS origins — for requests that carry
// the session cookie, and for anonymous ones, so a hostile page cannot log
// a victim in to its own account either. Requests that send an API key are
// not affected: a browser never attaches a key on its own. Requests without
// those headers (curl, servers) pass.
func CSRF(trustedOrigins []string) func(http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	for _, o := range trustedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			panic("api: CSRF: " + err.Error())
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if apiKeyFrom(r) == "" {
				if err := cop.Check(r); err != nil {
					WriteError(w, NewError(http.StatusForbidden, "cross-site request refused: a cookie-authenticated change must come from brain's own pages or a trusted origin"))
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}
