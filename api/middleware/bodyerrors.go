// This file marks the errors of reading a request body as the client's.
package middleware

import (
	"io"
	"net/http"
)

// ReadError is an error that came out of reading the request body, so it
// can be told apart from an error of the same type that a handler got
// from a store (an io.ErrUnexpectedEOF from a database connection is the
// server's problem; from the request body it is the client's). Find it
// with errors.As.
type ReadError struct{ Err error }

// Error is the read error's text.
func (e *ReadError) Error() string { return e.Err.Error() }

// Unwrap returns the read error.
func (e *ReadError) Unwrap() error { return e.Err }

type markedBody struct{ io.ReadCloser }

// Read reads the body, marking its errors as the client's.
func (b markedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = &ReadError{err}
	}
	return n, err
}

// MarkBodyErrors is a middleware that wraps every error from reading the
// request body in a [ReadError]. huma turns a body read error it does not
// recognize into a 500; with the mark, package api's error envelope
// answers 400, 408, 413 or 499 instead.
func MarkBodyErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		markBody(r)
		next.ServeHTTP(w, r)
	})
}

// markBody wraps r's body, if it has one, in place.
func markBody(r *http.Request) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = markedBody{r.Body}
	}
}
