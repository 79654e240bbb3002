package api

import (
	"context"
	"net/http"
	"net/textproto"
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
	if token, ok := sessionToken(r); ok {
		return svc.Authenticate(ctx, token)
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

// sessionToken is the value of r's session cookie: r.Cookie(SessionCookie)'s,
// without a Cookie made for every cookie the request sends. Where the
// first cookie of that name is anything but plain (quoted, or of bytes a
// token never holds) it asks r.Cookie, which decides.
func sessionToken(r *http.Request) (string, bool) {
	for _, line := range r.Header["Cookie"] {
		for part := range strings.SplitSeq(line, ";") {
			name, value, _ := strings.Cut(textproto.TrimString(part), "=")
			if textproto.TrimString(name) != SessionCookie {
				continue
			}
			if plainCookieValue(value) {
				return value, true
			}
			c, err := r.Cookie(SessionCookie)
			if err != nil {
				return "", false
			}
			return c.Value, true
		}
	}
	return "", false
}

// plainCookieValue reports whether v is a cookie value net/http would
// take as it is: not empty, no quotes, no space, comma, semicolon or
// backslash, printable ASCII.
func plainCookieValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return v != ""
}
