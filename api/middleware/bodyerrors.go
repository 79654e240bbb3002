package middleware

import (
	"io"
	"net/http"
)

// ReadError is an error from reading the request body: the client's, unlike
// the same error from a store's connection. Find it with errors.As.
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
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = markedBody{r.Body}
		}
		next.ServeHTTP(w, r)
	})
}
