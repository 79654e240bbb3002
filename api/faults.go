package api

import (
	"errors"
	"net/http"

	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/internal/product"
)

// msgStoreUnavailable is the message of a 503 for a store that failed.
const msgStoreUnavailable = product.Name + "'s database does not answer right now; retry shortly"

// faultAnswers maps each error kind (package fault) to its status and
// default message; Unavailable first, never the client's fault.
var faultAnswers = []struct {
	kind    error
	status  int
	message string
}{
	{fault.ErrUnavailable, http.StatusServiceUnavailable, msgStoreUnavailable},
	{fault.ErrNotFound, http.StatusNotFound, "you have nothing with that id"},
	{fault.ErrConflict, http.StatusConflict, "that exists already"},
	{fault.ErrTooMany, http.StatusConflict, "you hold as many as allowed: delete some first"},
}

// Messages maps an error kind (fault.ErrNotFound, ...) to its message at
// one operation.
type Messages map[error]string

// ErrorFor is the envelope of err by its kind, with msgs' message for it;
// an *Error, nil, and an error of no kind are returned as they are.
func ErrorFor(err error, msgs Messages) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	i := faultAnswer(err)
	if i < 0 {
		return err
	}
	a := faultAnswers[i]
	msg, ok := msgs[a.kind]
	if !ok {
		msg = a.message
	}
	if a.status == http.StatusServiceUnavailable {
		return unavailable(msg, err)
	}
	return NewError(a.status, msg)
}

// faultAnswer is the index in faultAnswers of err's kind, or -1.
func faultAnswer(err error) int {
	for i, a := range faultAnswers {
		if errors.Is(err, a.kind) {
			return i
		}
	}
	return -1
}

// StoreError is the answer to a database error a handler did not handle
// itself: 503 with Retry-After, its cause logged, never sent. nil stays nil.
func StoreError(err error) error {
	if err == nil {
		return nil
	}
	return unavailable(msgStoreUnavailable, err)
}
