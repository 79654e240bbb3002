// Package fault is the one vocabulary of errors every layer speaks: a
// handful of kinds, each a sentinel error, that a store returns, a domain
// package wraps and api maps to an HTTP status (api.ErrorFor). A package
// declares its own errors on these kinds, so that errors.Is answers for
// the kind whoever raised it:
//
//	var ErrNotFound = fault.ErrNotFound                               // the same error
//	var ErrBusy = fmt.Errorf("auth: every slot is busy: %w", fault.ErrUnavailable) // a kind of it
//
// The messages name no package: a not-found from any store reads "not
// found".
package fault

import (
	"context"
	"errors"
	"fmt"
)

// The kinds.
var (
	// ErrNotFound: nothing of the caller's has that name or id. Every store
	// returns this error itself, so that one errors.Is serves them all.
	ErrNotFound = errors.New("not found")
	// ErrConflict: what was to be created exists already (a username taken).
	ErrConflict = errors.New("already exists")
	// ErrTooMany: the caller holds as many as a cap allows (of API keys, of
	// items): they must free some before they add more.
	ErrTooMany = errors.New("at the cap")
	// ErrUnavailable: not the caller's fault, and worth retrying shortly: a
	// store down or too slow, every slot of a scarce resource busy.
	ErrUnavailable = errors.New("unavailable")
	// ErrPermanent: work that no other attempt can cure, such as a job whose
	// record is gone; a queue does not retry it.
	ErrPermanent = errors.New("permanent failure")
)

// Kinds lists the kinds, in the order [Kind] tests them.
var Kinds = []error{ErrUnavailable, ErrNotFound, ErrConflict, ErrTooMany, ErrPermanent}

// Kind returns the kind err is of, the first of [Kinds] it wraps, or nil
// for none.
func Kind(err error) error {
	if err == nil {
		return nil
	}
	for _, k := range Kinds {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

// Outage marks err, from a store or a context, as [ErrUnavailable] unless it
// is nil, of a kind already (the store's answer, or marked before), or
// the caller's leaving (context.Canceled), which is nobody's outage. A
// service passes every error of its store through it.
func Outage(err error) error {
	if err == nil || Kind(err) != nil || errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
