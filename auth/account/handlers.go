package account

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/internal/page"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/streams"
)

type handlers struct {
	svc     *auth.Service
	cfg     Config
	maxKeys int // the API-key cap the 409 names
	now     func() time.Time
}

func (h *handlers) login(ctx context.Context, in *LoginInput) (*LoginOutput, error) {
	ip := middleware.ClientKey(ctx)
	if err := admitPasswordAttempt(ctx, h.svc, auth.NormalizeUsername(in.Body.Username), ip, h.now()); err != nil {
		return nil, err
	}
	token, se, u, err := h.svc.Login(ctx, in.Body.Username, in.Body.Password, ip)
	if err != nil {
		return nil, authError(ctx, err, nil)
	}
	out := &LoginOutput{SetCookie: sessionCookie(token, se.ExpiresAt, h.cfg.CookieSecure, h.now()), CacheControl: noStore}
	out.Body.User, out.Body.ExpiresAt = userView(u), se.ExpiresAt
	return out, nil
}

func (h *handlers) logout(ctx context.Context, _ *struct{}) (*LogoutOutput, error) {
	if err := h.svc.Logout(ctx, auth.FromContext(ctx)); err != nil {
		return nil, authError(ctx, err, nil)
	}
	return &LogoutOutput{SetCookie: sessionCookie("", time.Time{}, h.cfg.CookieSecure, h.now())}, nil
}

func (h *handlers) me(ctx context.Context, _ *struct{}) (*MeOutput, error) {
	id := auth.FromContext(ctx)
	out := &MeOutput{}
	out.Body.User, out.Body.Auth = userView(id.User), string(id.Method)
	if id.Method == auth.MethodSession {
		out.Body.ExpiresAt = &id.ExpiresAt
	}
	return out, nil
}

func (h *handlers) changePassword(ctx context.Context, in *PasswordInput) (*struct{}, error) {
	id, ip := auth.FromContext(ctx), middleware.ClientKey(ctx)
	if err := admitPasswordAttempt(ctx, h.svc, id.User.Username, ip, h.now()); err != nil {
		return nil, err
	}
	if err := h.svc.ChangePassword(ctx, id, ip, in.Body.Current, in.Body.New); err != nil {
		if errors.Is(err, auth.ErrInvalidCredentials) {
			return nil, api.NewError(http.StatusForbidden, "the current password is wrong")
		}
		return nil, authError(ctx, err, nil)
	}
	return nil, nil
}

func (h *handlers) createAPIKey(ctx context.Context, in *CreateAPIKeyInput) (*CreateAPIKeyOutput, error) {
	if !displayable(in.Body.Name) {
		return nil, api.NewError(http.StatusUnprocessableEntity, "", api.FieldError{Location: "body.name", Message: "a name is 1 to 64 printable characters, not only spaces"})
	}
	k, secret, err := h.svc.CreateAPIKey(ctx, auth.FromContext(ctx).User.ID, in.Body.Name)
	if err != nil {
		return nil, authError(ctx, err, api.Messages{fault.ErrTooMany: fmt.Sprintf("you have %d API keys, the most allowed: delete one before creating another", h.maxKeys)})
	}
	out := &CreateAPIKeyOutput{}
	out.Body.APIKeyView, out.Body.Key = apiKeyView(k), secret
	h.publish(ctx, apiKeyCreated, k.UserID, out.Body.APIKeyView)
	return out, nil
}

func (h *handlers) listAPIKeys(ctx context.Context, in *ListAPIKeysInput) (*ListAPIKeysOutput, error) {
	after, err := page.Decode(in.Cursor, cursorID.MatchString)
	if err != nil {
		return nil, api.NewError(http.StatusUnprocessableEntity, "the cursor is not one this list gave out: start again without it",
			api.FieldError{Location: "query.cursor", Message: "not a cursor of this list"})
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
	out.Body.NextCursor = page.Encode(next)
	return out, nil
}

func (h *handlers) deleteAPIKey(ctx context.Context, in *DeleteAPIKeyInput) (*struct{}, error) {
	user := auth.FromContext(ctx).User.ID
	if err := h.svc.DeleteAPIKey(ctx, user, in.ID); err != nil {
		return nil, authError(ctx, err, api.Messages{fault.ErrNotFound: "you have no API key with that id"})
	}
	h.publish(ctx, apiKeyDeleted, user, DeletedEvent{ID: in.ID})
	return nil, nil
}

func (h *handlers) publish(ctx context.Context, e streams.EventType, user string, data any) {
	if h.cfg.Hub != nil {
		streams.Publish(ctx, h.cfg.Hub, e, user, data)
	}
}

// sessionCookie sets (token != "") or clears the session cookie.
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

var cursorID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// displayable reports whether an API key's name is not blank and has no
// control, bidi control or line separator characters.
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

var (
	apiKeyCreated = streams.EventType{Name: "apikey.created", Data: APIKeyView{}, Doc: "You created an API key (its secret is never sent again)."}
	apiKeyDeleted = streams.EventType{Name: "apikey.deleted", Data: DeletedEvent{}, Doc: "You deleted an API key."}
)

// DeletedEvent names what was deleted.
type DeletedEvent struct {
	ID string `json:"id" example:"9c1e4b7a2d8f4036b5a1e7c3d9f20b64" doc:"The id of what was deleted."`
}

// admitPasswordAttempt checks the login back-off, whose refusal takes no
// token, then charges the operation's plane.
func admitPasswordAttempt(ctx context.Context, svc *auth.Service, username, ip string, now time.Time) error {
	if err := svc.Backoff.Check(ctx, username, ip, now); err != nil {
		api.SkipCharge(ctx)
		return authError(ctx, err, nil)
	}
	return api.ChargeNow(ctx)
}

const msgBusy = product.Name + " is busy checking other passwords; retry shortly"

// authError maps the auth package's errors to envelopes.
func authError(ctx context.Context, err error, msgs api.Messages) error {
	if errors.Is(err, auth.ErrBusy) {
		return api.ErrorFor(err, api.Messages{fault.ErrUnavailable: msgBusy})
	}
	var te *auth.ThrottledError
	switch {
	case errors.As(err, &te):
		return api.LoginBackedOff(ctx, te)
	case errors.Is(err, auth.ErrInvalidCredentials):
		return api.NewError(http.StatusUnauthorized, "wrong username or password")
	case errors.Is(err, auth.ErrUnauthenticated):
		return api.NewError(http.StatusUnauthorized, "log in first")
	case errors.Is(err, auth.ErrWeakPassword):
		return api.NewError(http.StatusUnprocessableEntity, "", api.FieldError{Location: "body.new", Message: "a password is 12 to 1024 characters"})
	}
	return api.ErrorFor(err, msgs)
}
