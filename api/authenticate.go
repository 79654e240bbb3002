package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/brain-template/brain/auth"
)

// resolveCaller returns the caller r authenticates as, by API key or else
// session cookie: auth.ErrUnauthenticated for unknown credentials, nil, nil
// for none; any other error means the store could not say.
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
	return r.Header.Get("X-Api-Key")
}
