// Package account is the account operations over HTTP: logging in and
// out, who the caller is, changing one's password, and one's API keys
// (create, list, delete), with their events on GET /api/v1/events.
//
// It is a feature like any other: [Feature] registers the operations on
// the platform's server with the platform's exported names only (package
// api's, and the client's address as api/middleware resolved it), over an
// [auth.Service], which does the work (package auth knows no HTTP).
// Package api does not know these operations exist: it reads the session
// cookie they set (api.SessionCookie) and the API keys they create, and
// runs the login back-off their handlers check (api.WithLoginBackoff).
package account
