// The errors of the Service, and how a store's failure becomes
// ErrUnavailable.

package auth

import (
	"errors"
	"fmt"

	"github.com/brain-template/brain/internal/fault"
)

// Errors of the [Service].
var (
	// ErrInvalidCredentials: unknown user or wrong password; the two are
	// deliberately one error.
	ErrInvalidCredentials = errors.New("auth: invalid username or password")
	// ErrUnauthenticated: the token or key is unknown, revoked or expired.
	ErrUnauthenticated = errors.New("auth: not authenticated")
	ErrInvalidUsername = errors.New("auth: a username is 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
	ErrWeakPassword    = fmt.Errorf("auth: a password is %d to %d characters", MinPasswordLen, MaxPasswordLen)
	// ErrNotCached: the credentials are not in this replica's caches, and
	// the context asked for no store lookup ([WithoutLookup]).
	ErrNotCached = errors.New("auth: not cached, and no lookup allowed")
	// ErrUnavailable: not the caller's fault, and worth retrying shortly;
	// it is fault.ErrUnavailable. It wraps every store error other than
	// ErrNotFound, ErrConflict and ErrTooMany (the store is down or too
	// slow), and ErrBusy. A caller that left (context.Canceled) is not
	// marked.
	ErrUnavailable = fault.ErrUnavailable
	// ErrBusy: every password-hashing slot stayed taken for the whole
	// HashWait. It wraps ErrUnavailable.
	ErrBusy = fmt.Errorf("%w: every password-hashing slot is busy", ErrUnavailable)
)

// unavailable marks err, from a store or a context, with ErrUnavailable
// unless it is the store's answer (ErrNotFound, ErrConflict, ErrTooMany), the caller's
// leaving (context.Canceled), or marked already: [fault.Outage].
func unavailable(err error) error { return fault.Outage(err) }
