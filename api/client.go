package api

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/brain-template/brain/api/middleware"
)

// A request can fail for reasons that are the client's, not the server's:
// its body is cut short or badly framed, or the client leaves before the
// answer. Those are 4xx (or 499, which only the access log sees), logged
// at INFO, never a 500 logged as an error.

// StatusClientClosedRequest is the status (nginx's, and huma's) that the
// access log records for a request whose client left before the answer.
// Nothing reaches the client.
const StatusClientClosedRequest = 499

// clientGone reports whether the client has left: net/http cancels a
// request's context when its connection closes (or an HTTP/2 stream is
// reset). A deadline set by the server is not the client leaving.
func clientGone(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}

// bodyReadError returns the envelope for err when err came from reading
// the request body, as middleware.MarkBodyErrors marks it (a truncated
// body, broken chunked framing, a reset connection), or nil when it did
// not. net/http's framing errors have no exported type; being read from
// the body is what makes them the client's. Whether the client is still
// there cannot be told (net/http cancels the request's context on any
// read error, and a client that only closed its sending side still reads
// the answer), so the answer is always sent.
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
