// This file is the account operations' handlers: each reads the caller
// (auth.FromContext) and hands the work to the auth service.
package account

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/streams"
)

// handlers are the handlers of the account operations, over one
// auth.Service.
type handlers struct {
	svc     *auth.Service
	cfg     Config
	maxKeys int              // the API-key cap the spec and the 409 name
	now     func() time.Time // the server's clock (api.Server.Now)
	hub     streams.Hub      // where the key events go (GET /api/v1/events)
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
	out := &CreateAPIKeyOutput{} // its Cache-Control: no-store is every authenticated answer's
	out.Body.APIKeyView, out.Body.Key = apiKeyView(k), secret
	h.publish(ctx, apiKeyCreated, k.UserID, out.Body.APIKeyView)
	return out, nil
}

func (h *handlers) listAPIKeys(ctx context.Context, in *ListAPIKeysInput) (*ListAPIKeysOutput, error) {
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

func (h *handlers) deleteAPIKey(ctx context.Context, in *DeleteAPIKeyInput) (*struct{}, error) {
	user := auth.FromContext(ctx).User.ID
	if err := h.svc.DeleteAPIKey(ctx, user, in.ID); err != nil {
		return nil, authError(ctx, err, api.Messages{fault.ErrNotFound: "you have no API key with that id"})
	}
	h.publish(ctx, apiKeyDeleted, user, DeletedEvent{ID: in.ID})
	return nil, nil
}

// publish sends an event of type e with data to user's streams, if the
// feature has a hub.
func (h *handlers) publish(ctx context.Context, e streams.EventType, user string, data any) {
	if h.hub != nil {
		streams.Publish(ctx, h.hub, e, user, data)
	}
}
