// Package account is the account operations over HTTP, over an
// [auth.Service]: login, logout, who am I, password, API keys and their events.
package account

import (
	"fmt"
	"net/http"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/streams"
	"github.com/danielgtaylor/huma/v2"
)

// Config is what the account operations need beyond the auth service.
type Config struct {
	CookieSecure bool        // the session cookie is Secure
	Hub          streams.Hub // where the API-key events go; nil: none
}

// UserView is a user as the API shows it.
type UserView struct {
	ID        string    `json:"id" example:"3f2a9c0e5b7d4e1fa2c3d4e5f6a7b8c9"`
	Username  string    `json:"username" example:"ada"`
	CreatedAt time.Time `json:"created_at" example:"2026-01-05T08:00:00Z"`
}

func userView(u auth.User) UserView {
	return UserView{ID: u.ID, Username: u.Username, CreatedAt: u.CreatedAt}
}

// LoginInput is the body of POST /auth/login.
type LoginInput struct {
	Body struct {
		Username string `json:"username" minLength:"1" maxLength:"64" example:"ada"`
		Password string `json:"password" minLength:"1" maxLength:"1024" example:"correct horse battery staple"`
	}
}

// smallBody is the body limit: the largest valid body is under 25 KiB.
const smallBody = 32 << 10

const noStore = "no-store"

// LoginOutput sets the session cookie.
type LoginOutput struct {
	SetCookie    http.Cookie `header:"Set-Cookie"`
	CacheControl string      `header:"Cache-Control" enum:"no-store" doc:"no-store: the response carries the session; no cache may keep it."`
	Body         struct {
		User      UserView  `json:"user"`
		ExpiresAt time.Time `json:"expires_at" example:"2026-05-28T09:30:12Z" doc:"When the session ends at the latest; it also ends after a period of inactivity."`
	}
}

// LogoutOutput clears the session cookie.
type LogoutOutput struct {
	SetCookie http.Cookie `header:"Set-Cookie"`
}

// MeOutput is the caller.
type MeOutput struct {
	Body struct {
		User      UserView   `json:"user"`
		Auth      string     `json:"auth" enum:"session,apikey" doc:"How this request authenticated."`
		ExpiresAt *time.Time `json:"expires_at,omitempty" example:"2026-05-28T09:30:12Z" doc:"For a session: when it ends at the latest."`
	}
}

// PasswordInput is the body of POST /auth/password.
type PasswordInput struct {
	Body struct {
		Current string `json:"current" minLength:"1" maxLength:"1024" example:"correct horse battery staple"`
		New     string `json:"new" minLength:"12" maxLength:"1024" example:"tulip lantern orbit seventy" doc:"12 to 1024 characters."`
	}
}

// APIKeyView is a key without its secret.
type APIKeyView struct {
	ID         string     `json:"id" example:"9c1e4b7a2d8f4036b5a1e7c3d9f20b64"`
	Name       string     `json:"name" example:"ci-deploy"`
	Prefix     string     `json:"prefix" example:"brk_3F9a_x2Q" doc:"The key's first characters, to tell keys apart."`
	CreatedAt  time.Time  `json:"created_at" example:"2026-03-02T10:15:00Z"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty" example:"2026-05-14T09:29:58Z" doc:"Updated within a minute of use, not on every request."`
}

func apiKeyView(k auth.APIKey) APIKeyView {
	v := APIKeyView{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt}
	if !k.LastUsedAt.IsZero() {
		t := k.LastUsedAt
		v.LastUsedAt = &t
	}
	return v
}

// CreateAPIKeyInput names a new key.
type CreateAPIKeyInput struct {
	Body struct {
		Name string `json:"name" minLength:"1" maxLength:"64" pattern:"^[^\\x00-\\x1f\\x7f]+$" example:"ci-deploy" doc:"1 to 64 printable characters."`
	}
}

// CreateAPIKeyOutput shows the key's secret, once.
type CreateAPIKeyOutput struct {
	Body struct {
		APIKeyView
		Key string `json:"key" example:"brk_3F9a_x2QmT0yZ8pLr6cVb1nWs4eKd7hJg" doc:"The key itself. It is shown only now; brain keeps only its hash."`
	}
}

// ListAPIKeysInput asks for one page of the caller's keys.
type ListAPIKeysInput struct {
	Limit  int    `query:"limit" minimum:"1" maximum:"100" default:"50" doc:"At most this many keys."`
	Cursor string `query:"cursor" maxLength:"128" pattern:"^[A-Za-z0-9_-]*$" example:"MTc3MjQ0NjUwMDAwMC45YzFlNGI3YTJkOGY0MDM2YjVhMWU3YzNkOWYyMGI2NA" doc:"Where the page starts: the next_cursor of the previous page; absent for the first page."`
}

// ListAPIKeysOutput is one page of the caller's keys.
type ListAPIKeysOutput struct {
	Body struct {
		Keys       []APIKeyView `json:"keys" nullable:"false" maxItems:"100"`
		NextCursor string       `json:"next_cursor,omitempty" example:"MTc3MjQ0NjUwMDAwMC45YzFlNGI3YTJkOGY0MDM2YjVhMWU3YzNkOWYyMGI2NA" doc:"The cursor of the next page. Absent on the last page."`
	}
}

// DeleteAPIKeyInput names the key to delete.
type DeleteAPIKeyInput struct {
	ID string `path:"id" pattern:"^[0-9a-f]{32}$" maxLength:"32" example:"9c1e4b7a2d8f4036b5a1e7c3d9f20b64" doc:"The key's id, as listed."`
}

// Feature registers the account operations and (with cfg.Hub) the API-key
// events. svc is nil for documenting the API only.
func Feature(svc *auth.Service, cfg Config) api.Feature {
	return func(s *api.Server) {
		addRoutes(s, svc, cfg)
		if cfg.Hub != nil {
			streams.DeclareEvents(s, apiKeyCreated, apiKeyDeleted)
		}
	}
}

func addRoutes(s *api.Server, svc *auth.Service, cfg Config) {
	h := &handlers{svc: svc, cfg: cfg, maxKeys: auth.DefaultMaxAPIKeys, now: s.Now}
	tags := api.Tag(s.API, "Auth", "Log in and out, see who you are, change your password, and manage your API keys.")
	public, callers, sessions := api.WithAccess(s.API, api.Public), api.WithAccess(s.API, api.Caller), api.WithAccess(s.API, api.Session)
	maxSessions := auth.DefaultMaxSessions
	if svc != nil {
		h.maxKeys, maxSessions = svc.Config().MaxAPIKeys, svc.Config().MaxSessions
	}

	huma.Register(public, api.WithLoginBackoff(huma.Operation{
		OperationID: "login", Method: http.MethodPost, MaxBodyBytes: smallBody, Path: api.Prefix + "/auth/login",
		Summary: "Log in", Tags: tags,
		Description: "Checks a username and password and sets the session cookie `" + api.SessionCookie + "` (HttpOnly, SameSite=Lax, Secure unless configured off). " +
			"An unknown user and a wrong password get the same 401. After 5 consecutive failures for a username (20 for a client IP) each further attempt must wait: 1 s, doubling, up to 15 min; a success resets the username's count. " +
			"When the password cannot be checked (the database does not answer, or too many passwords are being checked at once) the answer is 503 with Retry-After, and the attempt is no failure." +
			fmt.Sprintf(" A user has at most %d sessions: a login beyond that ends the user's oldest session.", maxSessions),
		Errors: []int{http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}), h.login)

	huma.Register(sessions, huma.Operation{
		OperationID: "logout", Method: http.MethodPost, Path: api.Prefix + "/auth/logout",
		Summary: "Log out", Tags: tags, DefaultStatus: http.StatusNoContent,
		Description: "Ends the session at once and clears the cookie.",
	}, h.logout)

	huma.Register(callers, huma.Operation{
		OperationID: "get-me", Method: http.MethodGet, Path: api.Prefix + "/auth/me",
		Summary: "Who am I", Tags: tags,
		Description: "The caller, and whether it authenticated with a session or an API key.",
	}, h.me)

	huma.Register(sessions, api.WithLoginBackoff(huma.Operation{
		OperationID: "change-password", Method: http.MethodPost, MaxBodyBytes: smallBody, Path: api.Prefix + "/auth/password",
		Summary: "Change my password", Tags: tags, DefaultStatus: http.StatusNoContent,
		Description: "Checks the current password, then sets the new one and ends every other session of the user: both happen or neither, even if the client goes away. " +
			"A wrong current password counts as a failed login; one that could not be checked (503) does not.",
		Errors: []int{http.StatusTooManyRequests},
	}), h.changePassword)

	huma.Register(sessions, huma.Operation{
		OperationID: "create-api-key", Method: http.MethodPost, MaxBodyBytes: smallBody, Path: api.Prefix + "/apikeys",
		Summary: "Create an API key", Tags: tags, DefaultStatus: http.StatusCreated,
		Description: "Creates a key for programs to call the API as you. The response is the only time the key is shown. Managing keys needs a session: a key cannot create keys. " +
			fmt.Sprintf("A user may have at most %d keys; beyond that the answer is 409 until one is deleted.", h.maxKeys),
		Errors: []int{http.StatusConflict},
	}, h.createAPIKey)

	huma.Register(sessions, huma.Operation{
		OperationID: "list-api-keys", Method: http.MethodGet, Path: api.Prefix + "/apikeys",
		Summary: "List my API keys", Tags: tags,
		Description: "Newest first, without secrets, a page at a time: pass each page's `next_cursor` as `cursor` to get the next, until a page has no `next_cursor`.",
	}, h.listAPIKeys)

	huma.Register(sessions, huma.Operation{
		OperationID: "delete-api-key", Method: http.MethodDelete, Path: api.Prefix + "/apikeys/{id}",
		Summary: "Delete an API key", Tags: tags, DefaultStatus: http.StatusNoContent,
		Description: "Revokes the key: at once on the server that answers, within seconds on the others.",
		Errors:      []int{http.StatusNotFound},
	}, h.deleteAPIKey)
}
