// This file is the one table from error kinds (package fault) to HTTP
// statuses, and ErrorFor, which the platform's handlers and a feature's
// use to answer an error of their domain.
package api

import (
	"errors"
	"net/http"

	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/internal/product"
)

// msgStoreUnavailable is the message of a 503 for a store that failed.
const msgStoreUnavailable = product.Name + "'s database does not answer right now; retry shortly"

// faultAnswers maps each error kind to its status and the message sent
// when the operation gives none, tested in order. Unavailable comes first:
// it is never the client's fault, whatever else the error wraps.
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

// Messages says, for an error kind (fault.ErrNotFound, ...), the message of
// its envelope at one operation: "you have no bookmark with that id".
type Messages map[error]string

// ErrorFor is the envelope of err by its kind (its status in faultAnswers), with the
// message msgs gives that kind, or the table's. A 503 carries Retry-After
// and keeps err as its cause, logged and never sent. An *Error stays
// itself, nil stays nil, and an error of no kind the table has is
// returned as it is (huma answers it 500 and logs it).
//
//	if err != nil {
//		return nil, api.ErrorFor(err, api.Messages{fault.ErrNotFound: "you have no bookmark with that id"})
//	}
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

// storeError is the answer to an error from the database that a handler
// did not handle itself (it handles store.ErrNotFound, say): the
// database failing or too slow, which is never the client's fault. It is
// 503 with Retry-After, the table's message for fault.ErrUnavailable, its
// cause logged and never sent; nil stays nil.
func storeError(err error) error {
	if err == nil {
		return nil
	}
	return unavailable(msgStoreUnavailable, err)
}
