// Package middleware holds the chi-style net/http middleware every request
// passes before its route: request id, nosniff, access log, panic recovery,
// body-error marking, client address, CORS and CSRF. [Chain] lists them in
// order; what one needs of package api it takes as a parameter.
package middleware

type contextKey struct{ name string }

func (k *contextKey) String() string { return "middleware context value " + k.name }
