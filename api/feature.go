// This file is the door a feature comes in by: a package outside api that
// adds operations to the server, using only the exported names below
// (its streams and events come in by package streams' door, which is
// built on this package's).
package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/brain-template/brain/api/middleware"
	"github.com/danielgtaylor/huma/v2"
)

// A Feature adds a feature's operations to s: its huma operations on
// s.API (with [WithAccess], [WithBudget], [Tag]), and, through package
// streams, its streams (streams.Add) and the events its users'
// GET /api/v1/events carries (streams.DeclareEvents). [New] calls each of
// Config.Features in order, after the platform's operations, so that the
// spec lists the features' tags after the platform's. The stream
// endpoints are a Feature too (package streams' Plane.Feature).
type Feature func(s *Server)

// Tag declares the spec's tag name, with its description, the first time
// it is asked for, and returns the operation's Tags: []string{name}. Ask
// for it once per group of operations:
//
//	tags := api.Tag(s.API, "Bookmarks", "URLs you keep.")
func Tag(api huma.API, name, description string) []string { return tagged(api, name, description) }

// Describe adds text, a paragraph saying what a feature is, to the
// spec's description (info.description), after the platform's paragraph
// and those of the features before it. Call it from the Feature:
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
// request. The server starts features' background work (their job
// queues' workers, their sweeps) with its logger so.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return middleware.WithLogger(ctx, l)
}
