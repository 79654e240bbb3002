// Package fault is the kinds of errors every layer speaks: sentinels a store
// returns, a domain package wraps and api maps to an HTTP status (api.ErrorFor).
package fault

import (
	"context"
	"errors"
	"fmt"
)

// The kinds.
var (
	ErrNotFound    = errors.New("not found")         // nothing of the caller's has that name or id
	ErrConflict    = errors.New("already exists")    // what was to be created exists already
	ErrTooMany     = errors.New("at the cap")        // the caller holds as many as a cap allows
	ErrUnavailable = errors.New("unavailable")       // not the caller's fault; worth retrying shortly
	ErrPermanent   = errors.New("permanent failure") // no other attempt can cure it: not retried
)

var kinds = []error{ErrUnavailable, ErrNotFound, ErrConflict, ErrTooMany, ErrPermanent}

// Kind returns the first kind err wraps (ErrUnavailable first), or nil.
func Kind(err error) error {
	if err == nil {
		return nil
	}
	for _, k := range kinds {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

// Outage marks a store's err as [ErrUnavailable] unless it is nil, of a kind
// already, or context.Canceled (the caller left).
func Outage(err error) error {
	if err == nil || Kind(err) != nil || errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
