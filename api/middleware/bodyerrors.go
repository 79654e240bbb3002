package middleware

import (
	"io"
	"net/http"
)

// ReadError is an error from reading the request body: the client's, unlike
// the same error from a store's connection.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return e.Err.Error() }

func (e *ReadError) Unwrap() error { return e.Err }

type markedBody struct{ io.ReadCloser }

func (b markedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = &ReadError{err}
	}
	return n, err
}

// MarkBodyErrors is a middleware that wraps every error from reading the
// request body in a [ReadError], so it is answered as the client's, not 500.
func MarkBodyErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = markedBody{r.Body}
		}
		next.ServeHTTP(w, r)
	})
}
