package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/internal/product"
	"github.com/danielgtaylor/huma/v2"
)

// UserView is a user as the API shows it.
type UserView struct {
	ID        string    `json:"id" example:"3f2a9c0e5b7d4e1fa2c3d4e5f6a7b8c9"`
	Username  string    `json:"username" example:"ada"`
	CreatedAt time.Time `json:"created_at"`
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

// smallBody is the body limit of the operations of this file: the largest
// valid body (two 1024-character passwords, every character JSON-escaped
// as a surrogate pair) is under 25 KiB, and anything larger is refused
// (413) before a byte of it is parsed.
const smallBody = 32 << 10

// noStore is the Cache-Control of a response that carries a secret: no
// cache, shared or private, may keep it.
const noStore = "no-store"

// LoginOutput sets the session cookie.
type LoginOutput struct {
	SetCookie    http.Cookie `header:"Set-Cookie"`
	CacheControl string      `header:"Cache-Control" enum:"no-store" doc:"no-store: the response carries the session; no cache may keep it."`
	Body         struct {
		User      UserView  `json:"user"`
		ExpiresAt time.Time `json:"expires_at" doc:"When the session ends at the latest; it also ends after a period of inactivity."`
	}
}

// MeOutput is the caller.
type MeOutput struct {
	Body struct {
		User      UserView   `json:"user"`
		Auth      string     `json:"auth" enum:"session,apikey" doc:"How this request authenticated."`
		ExpiresAt *time.Time `json:"expires_at,omitempty" doc:"For a session: when it ends at the latest."`
	}
}

// PasswordInput is the body of POST /auth/password.
type PasswordInput struct {
	Body struct {
		Current string `json:"current" minLength:"1" maxLength:"1024"`
		New     string `json:"new" minLength:"12" maxLength:"1024" doc:"12 to 1024 characters."`
	}
}

// APIKeyView is a key without its secret.
type APIKeyView struct {
	ID         string     `json:"id"`
	Name       string     `json:"name" example:"laptop"`
	Prefix     string     `json:"prefix" example:"brk_3F9a_x2Q" doc:"The key's first characters, to tell keys apart."`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty" doc:"Updated within a minute of use, not on every request."`
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
		Name string `json:"name" minLength:"1" maxLength:"64" pattern:"^[^\\x00-\\x1f\\x7f]+$" example:"laptop" doc:"1 to 64 printable characters."`
	}
}

// CreateAPIKeyOutput shows the key's secret, once.
type CreateAPIKeyOutput struct {
	CacheControl string `header:"Cache-Control" enum:"no-store" doc:"no-store: the response carries the key; no cache may keep it."`
	Body         struct {
		APIKeyView
		Key string `json:"key" example:"brk_3F9a_x2QmT0yZ8pLr6cVb1nWs4eKd7hJg" doc:"The key itself. It is shown only now; brain keeps only its hash."`
	}
}

// ListAPIKeysInput asks for one page of the caller's keys.
type ListAPIKeysInput struct {
	Limit  int    `query:"limit" minimum:"1" maximum:"100" default:"50" doc:"At most this many keys."`
	Cursor string `query:"cursor" maxLength:"128" pattern:"^[A-Za-z0-9_-]*$" doc:"Where the page starts: the next_cursor of the previous page; absent for the first page."`
}

// ListAPIKeysOutput is one page of the caller's keys.
type ListAPIKeysOutput struct {
	Body struct {
		Keys       []APIKeyView `json:"keys" nullable:"false" maxItems:"100"`
		NextCursor string       `json:"next_cursor,omitempty" doc:"The cursor of the next page. Absent on the last page."`
	}
}

// DeleteAPIKeyInput names the key to delete.
type DeleteAPIKeyInput struct {
	ID string `path:"id" pattern:"^[0-9a-f]{32}$" maxLength:"32" doc:"The key's id, as listed."`
}

func addAuthRoutes(api huma.API, cfg Config, publish publisher) {
	h := &authHandlers{svc: cfg.Auth, cfg: cfg, maxKeys: auth.DefaultMaxAPIKeys, publish: publish}
	tags := tagged(api, "Auth", "Log in and out, see who you are, change your password, and manage your API keys.")
	public, callers, sessions := WithAccess(api, Public), WithAccess(api, Caller), WithAccess(api, Session)
	// The caps the spec shows: the running ones, or the defaults when
	// there is no service (brain openapi).
	maxSessions := auth.DefaultMaxSessions
	if cfg.Auth != nil {
		h.maxKeys, maxSessions = cfg.Auth.Config().MaxAPIKeys, cfg.Auth.Config().MaxSessions
	}

	huma.Register(public, WithLoginBackoff(huma.Operation{
		OperationID: "login", Method: http.MethodPost, MaxBodyBytes: smallBody, Path: Prefix + "/auth/login",
		Summary: "Log in", Tags: tags,
		Description: "Checks a username and password and sets the session cookie `" + SessionCookie + "` (HttpOnly, SameSite=Lax, Secure unless configured off). " +
			"An unknown user and a wrong password get the same 401. After 5 consecutive failures for a username (20 for a client IP) each further attempt must wait: 1 s, doubling, up to 15 min; a success resets the username's count. " +
			"When the password cannot be checked (the database does not answer, or too many passwords are being checked at once) the answer is 503 with Retry-After, and the attempt is no failure." +
			fmt.Sprintf(" A user has at most %d sessions: a login beyond that ends the user's oldest session.", maxSessions),
		Errors: []int{http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}), h.login)

	huma.Register(sessions, huma.Operation{
		OperationID: "logout", Method: http.MethodPost, Path: Prefix + "/auth/logout",
		Summary: "Log out", Tags: tags, DefaultStatus: http.StatusNoContent,
		Description: "Ends the session at once and clears the cookie.",
	}, h.logout)

	huma.Register(callers, huma.Operation{
		OperationID: "get-me", Method: http.MethodGet, Path: Prefix + "/auth/me",
		Summary: "Who am I", Tags: tags,
		Description: "The caller, and whether it authenticated with a session or an API key.",
	}, h.me)

	huma.Register(sessions, WithLoginBackoff(huma.Operation{
		OperationID: "change-password", Method: http.MethodPost, MaxBodyBytes: smallBody, Path: Prefix + "/auth/password",
		Summary: "Change my password", Tags: tags, DefaultStatus: http.StatusNoContent,
		Description: "Checks the current password, then sets the new one and ends every other session of the user: both happen or neither, even if the client goes away. " +
			"A wrong current password counts as a failed login; one that could not be checked (503) does not.",
		Errors: []int{http.StatusTooManyRequests},
	}), h.changePassword)

	huma.Register(sessions, huma.Operation{
		OperationID: "create-api-key", Method: http.MethodPost, MaxBodyBytes: smallBody, Path: Prefix + "/apikeys",
		Summary: "Create an API key", Tags: tags, DefaultStatus: http.StatusCreated,
		Description: "Creates a key for programs to call the API as you. The response is the only time the key is shown. Managing keys needs a session: a key cannot create keys. " +
			fmt.Sprintf("A user may have at most %d keys; beyond that the answer is 409 until one is deleted.", h.maxKeys),
		Errors: []int{http.StatusConflict},
	}, h.createAPIKey)

	huma.Register(sessions, huma.Operation{
		OperationID: "list-api-keys", Method: http.MethodGet, Path: Prefix + "/apikeys",
		Summary: "List my API keys", Tags: tags,
		Description: "Newest first, without secrets, a page at a time: pass each page's `next_cursor` as `cursor` to get the next, until a page has no `next_cursor`.",
	}, h.listAPIKeys)

	huma.Register(sessions, huma.Operation{
		OperationID: "delete-api-key", Method: http.MethodDelete, Path: Prefix + "/apikeys/{id}",
		Summary: "Delete an API key", Tags: tags, DefaultStatus: http.StatusNoContent,
		Description: "Revokes the key: at once on the server that answers, within seconds on the others.",
		Errors:      []int{http.StatusNotFound},
	}, h.deleteAPIKey)
}

// authHandlers are the handlers of the auth operations, over one
// auth.Service.
type authHandlers struct {
	svc     *auth.Service
	cfg     Config
	maxKeys int       // the API-key cap the spec and the 409 name
	publish publisher // where the key events go (GET /api/v1/events)
}

func (h *authHandlers) login(ctx context.Context, in *LoginInput) (*LoginOutput, error) {
	ip := middleware.GetClientIP(ctx)
	if err := admitPasswordAttempt(ctx, h.svc, auth.NormalizeUsername(in.Body.Username), ip, h.cfg.now()); err != nil {
		return nil, err
	}
	token, se, u, err := h.svc.Login(ctx, in.Body.Username, in.Body.Password, ip)
	if err != nil {
		return nil, authError(ctx, err, nil)
	}
	out := &LoginOutput{SetCookie: sessionCookie(token, se.ExpiresAt, h.cfg.CookieSecure, h.cfg.now()), CacheControl: noStore}
	out.Body.User, out.Body.ExpiresAt = userView(u), se.ExpiresAt
	return out, nil
}

// LogoutOutput clears the session cookie.
type LogoutOutput struct {
	SetCookie http.Cookie `header:"Set-Cookie"`
}

func (h *authHandlers) logout(ctx context.Context, _ *struct{}) (*LogoutOutput, error) {
	if err := h.svc.Logout(ctx, auth.FromContext(ctx)); err != nil {
		return nil, authError(ctx, err, nil)
	}
	return &LogoutOutput{SetCookie: sessionCookie("", time.Time{}, h.cfg.CookieSecure, h.cfg.now())}, nil
}

func (h *authHandlers) me(ctx context.Context, _ *struct{}) (*MeOutput, error) {
	id := auth.FromContext(ctx)
	out := &MeOutput{}
	out.Body.User, out.Body.Auth = userView(id.User), string(id.Method)
	if id.Method == auth.MethodSession {
		out.Body.ExpiresAt = &id.ExpiresAt
	}
	return out, nil
}

func (h *authHandlers) changePassword(ctx context.Context, in *PasswordInput) (*struct{}, error) {
	id, ip := auth.FromContext(ctx), middleware.GetClientIP(ctx)
	if err := admitPasswordAttempt(ctx, h.svc, id.User.Username, ip, h.cfg.now()); err != nil {
		return nil, err
	}
	if err := h.svc.ChangePassword(ctx, id, ip, in.Body.Current, in.Body.New); err != nil {
		if errors.Is(err, auth.ErrInvalidCredentials) {
			return nil, NewError(http.StatusForbidden, "the current password is wrong")
		}
		return nil, authError(ctx, err, nil)
	}
	return nil, nil
}

func (h *authHandlers) createAPIKey(ctx context.Context, in *CreateAPIKeyInput) (*CreateAPIKeyOutput, error) {
	if !displayable(in.Body.Name) {
		return nil, NewError(http.StatusUnprocessableEntity, "", FieldError{Location: "body.name", Message: "a name is 1 to 64 printable characters, not only spaces"})
	}
	k, secret, err := h.svc.CreateAPIKey(ctx, auth.FromContext(ctx).User.ID, in.Body.Name)
	if err != nil {
		return nil, authError(ctx, err, Messages{fault.ErrTooMany: fmt.Sprintf("you have %d API keys, the most allowed: delete one before creating another", h.maxKeys)})
	}
	out := &CreateAPIKeyOutput{CacheControl: noStore}
	out.Body.APIKeyView, out.Body.Key = apiKeyView(k), secret
	h.publish(ctx, k.UserID, EventAPIKeyCreated, out.Body.APIKeyView)
	return out, nil
}

func (h *authHandlers) listAPIKeys(ctx context.Context, in *ListAPIKeysInput) (*ListAPIKeysOutput, error) {
	after, err := decodeCursor(in.Cursor)
	if err != nil {
		return nil, badCursor()
	}
	keys, next, err := h.svc.ListAPIKeys(ctx, auth.FromContext(ctx).User.ID, after, in.Limit)
	if err != nil {
		return nil, authError(ctx, err, nil)
	}
	out := &ListAPIKeysOutput{}
	out.Body.Keys = make([]APIKeyView, len(keys))
	for i, k := range keys {
		out.Body.Keys[i] = apiKeyView(k)
	}
	out.Body.NextCursor = encodeCursor(next)
	return out, nil
}

func (h *authHandlers) deleteAPIKey(ctx context.Context, in *DeleteAPIKeyInput) (*struct{}, error) {
	user := auth.FromContext(ctx).User.ID
	if err := h.svc.DeleteAPIKey(ctx, user, in.ID); err != nil {
		return nil, authError(ctx, err, Messages{fault.ErrNotFound: "you have no API key with that id"})
	}
	h.publish(ctx, user, EventAPIKeyDeleted, DeletedEvent{ID: in.ID})
	return nil, nil
}

// displayable reports whether a name can be shown to a person as it is:
// not blank, and free of control characters (C0 and C1) and of the
// invisible characters that reorder or break text (bidi controls, line
// and paragraph separators). The schema's pattern refuses C0 controls;
// the rest cannot be written portably in a JSON Schema pattern.
func displayable(name string) bool {
	if strings.TrimSpace(name) == "" {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

// admitPasswordAttempt decides a password attempt of an operation that
// declares LoginBackoff: the login back-off first, whose refusal (429
// scope login) takes no token from any budget, then the operation's plane.
// The throttle's Begin decides again when the password is checked, so a
// race of concurrent guesses can still be refused after taking a token.
func admitPasswordAttempt(ctx context.Context, svc *auth.Service, username, ip string, now time.Time) error {
	if err := svc.Throttle.Check(username, ip, now); err != nil {
		SkipCharge(ctx)
		return authError(ctx, err, nil)
	}
	return ChargeNow(ctx)
}

// authError maps the auth package's errors to envelopes: its own errors
// here, then the error kinds by the one table ([ErrorFor], with msgs):
// what is not the client's fault (auth.ErrUnavailable) is 503, its cause
// kept for the log; anything else unknown stays an internal error.
func authError(ctx context.Context, err error, msgs Messages) error {
	if errors.Is(err, auth.ErrBusy) {
		return unavailable(product.Name+" is busy checking other passwords; retry shortly", err)
	}
	var te *auth.ThrottledError
	switch {
	case errors.As(err, &te):
		e := RateLimited("login", "login", te.Failures, 0, te.RetryAfter)
		observeRefusal(ctx, e, nil)
		return e
	case errors.Is(err, auth.ErrInvalidCredentials):
		return NewError(http.StatusUnauthorized, "wrong username or password")
	case errors.Is(err, auth.ErrUnauthenticated):
		return NewError(http.StatusUnauthorized, "log in first")
	case errors.Is(err, auth.ErrWeakPassword):
		return NewError(http.StatusUnprocessableEntity, "", FieldError{Location: "body.new", Message: "a password is 12 to 1024 characters"})
	}
	return ErrorFor(err, msgs)
}

// sessionCookie sets (token != "") or clears the session cookie.
func sessionCookie(token string, expires time.Time, secure bool, now time.Time) http.Cookie {
	c := http.Cookie{Name: SessionCookie, Value: token, Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode}
	if token == "" {
		c.MaxAge = -1
		return c
	}
	c.Expires = expires
	c.MaxAge = int(expires.Sub(now).Seconds())
	return c
}
