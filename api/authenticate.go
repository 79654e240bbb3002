package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/brain-template/brain/auth"
)

// Authenticate is a middleware that resolves the caller from an API key
// (Authorization: Bearer brk_... or X-API-Key) or the session cookie, and
// stores it in the context (auth.FromContext). It refuses nothing: a
// request without valid credentials goes on anonymous, and each operation
// decides (requireCaller). When the store cannot answer, the request goes
// on anonymous too, marked with the error so that operations needing a
// caller answer 503 (and log it) while the public ones (health, ready,
// login) still work.
func Authenticate(svc *auth.Service) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var id *auth.Identity
			var err error
			if key := apiKeyFrom(r); key != "" {
				id, err = svc.AuthenticateKey(r.Context(), key)
			} else if c, cerr := r.Cookie(SessionCookie); cerr == nil {
				id, err = svc.Authenticate(r.Context(), c.Value)
			}
			if err != nil && !errors.Is(err, auth.ErrUnauthenticated) {
				r = r.WithContext(context.WithValue(r.Context(), authDownKey, err))
			}
			if id != nil {
				r = r.WithContext(auth.NewContext(r.Context(), id))
			}
			next.ServeHTTP(w, r)
		})
	}
}

var authDownKey = &contextKey{"auth-unavailable"}

// authUnavailable returns why [Authenticate] could not check the request's
// credentials, or nil.
func authUnavailable(ctx context.Context) error { err, _ := ctx.Value(authDownKey).(error); return err }

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
// a victim in to its own account either. API-key requests are not
// affected: a browser never attaches a key on its own. Requests without
// those headers (curl, servers) pass. Mount it after [Authenticate].
func CSRF(trustedOrigins []string) func(http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	for _, o := range trustedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			panic("api: CSRF: " + err.Error())
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if id := auth.FromContext(r.Context()); (id == nil && apiKeyFrom(r) == "") || (id != nil && id.Method == auth.MethodSession) {
				if err := cop.Check(r); err != nil {
					WriteError(w, NewError(http.StatusForbidden, "cross-site request refused: a cookie-authenticated change must come from brain's own pages or a trusted origin"))
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}
