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
	return r.Header.Get("X-Api-Key") // X-API-Key, in the form Get would make of it each time
}
