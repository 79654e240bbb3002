// This file forbids browsers to guess a response's type.
package middleware

import "net/http"

// NoSniff is a middleware that sets X-Content-Type-Options: nosniff on
// every response, whoever writes it (huma, a middleware, the router, a
// panic): a browser then never guesses a type from the bytes, so an error
// that holds anything of a request is never run as HTML or script.
func NoSniff(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noSniff(w.Header())
		next.ServeHTTP(w, r)
	})
}

// noSniff sets X-Content-Type-Options: nosniff in h.
func noSniff(h http.Header) { h["X-Content-Type-Options"] = nosniff }

// nosniff is the header's value, one slice for every response: net/http
// only reads it, and Set or Add would give a header a slice of its own.
var nosniff = []string{"nosniff"}
