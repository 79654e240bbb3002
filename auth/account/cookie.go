// This file is the session cookie as the account operations set it.
package account

import (
	"net/http"
	"time"

	"github.com/brain-template/brain/api"
)

// sessionCookie sets (token != "") or clears the session cookie, the one
// api reads (api.SessionCookie): HttpOnly, so no script reads it;
// SameSite=Lax, so no other site's form posts with it; Secure when secure;
// and expiring with the session at expires (now is the server's time).
func sessionCookie(token string, expires time.Time, secure bool, now time.Time) http.Cookie {
	c := http.Cookie{Name: api.SessionCookie, Value: token, Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode}
	if token == "" {
		c.MaxAge = -1
		return c
	}
	c.Expires = expires
	c.MaxAge = int(expires.Sub(now).Seconds())
	return c
}
