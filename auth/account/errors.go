// This file is how the account operations answer the auth service's
// errors, and the login back-off their password checks pass first.
package account

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/internal/product"
)

// admitPasswordAttempt decides a password attempt of an operation that
// declares the login back-off (api.WithLoginBackoff): the back-off first,
// whose refusal (429 scope login) takes no token from any budget, then the
// operation's plane (api.ChargeNow). The throttle's Begin decides again
// when the password is checked, so a race of concurrent guesses can still
// be refused after taking a token.
func admitPasswordAttempt(ctx context.Context, svc *auth.Service, username, ip string, now time.Time) error {
	if err := svc.Backoff.Check(ctx, username, ip, now); err != nil {
		api.SkipCharge(ctx)
		return authError(ctx, err, nil)
	}
	return api.ChargeNow(ctx)
}

// msgBusy is the 503's message when every password-hashing slot is taken.
const msgBusy = product.Name + " is busy checking other passwords; retry shortly"

// authError maps the auth package's errors to envelopes: its own errors
// here, then the error kinds by api's one table (api.ErrorFor, with msgs):
// what is not the client's fault (auth.ErrUnavailable, auth.ErrBusy among
// them) is 503, its cause kept for the log; anything else unknown stays an
// internal error.
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
