// This file is the door a feature, a package that adds operations to the
// server, comes in by.
package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/brain-template/brain/api/middleware"
	"github.com/danielgtaylor/huma/v2"
)

// A Feature adds a feature's operations to s: huma operations on s.API
// ([WithAccess], [WithBudget], [Tag]) and, through package streams, its
// streams and events. [New] calls each of Config.Features in order.
type Feature func(s *Server)

// Tag declares the spec's tag name, with its description, once, and
// returns the operation's Tags:
//
//	tags := api.Tag(s.API, "Bookmarks", "URLs you keep.")
func Tag(api huma.API, name, description string) []string { return tagged(api, name, description) }

// Describe adds a paragraph saying what a feature is to the spec's
// description, after those before it. Call it from the Feature:
//
//	api.Describe(s, "Bookmarks: keep the URLs you want to read again.")
func Describe(s *Server, text string) {
	s.described = append(s.described, text)
	s.API.OpenAPI().Info.Description = describe(s.described)
}

// StoreError is the answer to an error from the database that a handler
// did not handle itself (a not-found it maps to 404, say): 503 with
// Retry-After, its cause logged and never sent. nil stays nil.
func StoreError(err error) error { return storeError(err) }

// MalformedBody is the 400 of a body that is not JSON, with details, as
// huma answers it for operations that do not read their body themselves.
func MalformedBody(details ...FieldError) *Error {
	return NewError(http.StatusBadRequest, msgMalformedBody, details...)
}

// Metrics is the registry the server reports to (Config.Metrics), where
// a feature registers its own ([Metrics.Counter]); nil for none.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Logger is the logger of ctx: a request's, with its id; else that of
// [WithLogger]; else slog.Default.
func Logger(ctx context.Context) *slog.Logger { return logger(ctx) }

// WithLogger returns ctx carrying l, the logger [Logger] gives outside a
// request, as features' background work is started.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return middleware.WithLogger(ctx, l)
}
