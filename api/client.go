package api

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/brain-template/brain/api/middleware"
)

// StatusClientClosedRequest is the status (nginx's) the access log records
// for a request whose client left before the answer.
const StatusClientClosedRequest = 499

// clientGone reports whether the client has left (not a server's deadline).
func clientGone(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}

// bodyReadError returns the 4xx for err when it came from reading the
// request body, or nil.
func bodyReadError(err error) *Error {
	var e *Error // a refusal of the body's bytes (the bytes in flight)
	if errors.As(err, &e) {
		return e
	}
	var re *middleware.ReadError
	if !errors.As(err, &re) {
		return nil
	}
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooBig):
		return NewError(http.StatusRequestEntityTooLarge, "")
	case errors.As(err, &ne) && ne.Timeout():
		return NewError(http.StatusRequestTimeout, "the request body did not arrive in time")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return NewError(http.StatusBadRequest, "the request body ended before the length it declared")
	}
	return NewError(http.StatusBadRequest, "the request body could not be read: its framing is broken")
}
