// This file is the door a feature comes in by: a package outside api that
// adds operations, streams and events to the server, using only the
// exported names below.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/brain-template/brain/streams"
	"github.com/danielgtaylor/huma/v2"
)

// A Feature adds a feature's operations to s: its huma operations on
// s.API (with [WithAccess], [WithBudget], [Tag]), its streams
// ([Server.AddStream]) and the events its users' GET /api/v1/events
// carries ([Server.DeclareEvents]). [New] calls each of Config.Features in
// order, after the platform's operations and before its streams, so that
// the spec lists the features' tags after the platform's and the events
// stream declares their events.
type Feature func(s *Server)

// Tag declares the spec's tag name, with its description, the first time
// it is asked for, and returns the operation's Tags: []string{name}. Ask
// for it once per group of operations:
//
//	tags := api.Tag(s.API, "Bookmarks", "URLs you keep.")
func Tag(api huma.API, name, description string) []string { return tagged(api, name, description) }

// StoreError is the answer to an error from the database that a handler
// did not handle itself (a not-found it maps to 404, say): 503 with
// Retry-After, its cause logged and never sent. nil stays nil.
func StoreError(err error) error { return storeError(err) }

// MalformedBody is the 400 of a body that is not JSON, with details, as
// huma answers it for operations that do not read their body themselves.
func MalformedBody(details ...FieldError) *Error {
	return NewError(http.StatusBadRequest, msgMalformedBody, details...)
}

// CodeKeyReused is the envelope code of an idempotency key sent again
// with other content: a 422 that is not a schema's.
const CodeKeyReused = codeKeyReused

// Metrics is the registry the server reports to (Config.Metrics), where
// a feature registers its own ([Metrics.Counter]); nil for none.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Now is the time on the server's clock (Config.Now): what a feature
// compares with the platform's times, such as the login back-off's or a
// session's expiry, so that a test's clock moves them all alike.
func (s *Server) Now() time.Time { return s.now() }

// Hub is the hub a user's GET /api/v1/events follows (Config.Streams.Hub,
// or the in-memory one New made): where a handler publishes its events
// ([PublishEvent]).
func (s *Server) Hub() streams.Hub { return s.streams.cfg.Hub }

// Logger is the logger of ctx: a request's, with its id, else the
// server's default.
func Logger(ctx context.Context) *slog.Logger { return logger(ctx) }

// CountQueuedJobs makes count the source of the live snapshot's
// jobs_queued (GET /api/v1/system/live): the jobs of every user waiting
// for a worker, read at most once a second, with a deadline of a second;
// a count that fails keeps the last. Without it the count is 0.
func (s *Server) CountQueuedJobs(count func(ctx context.Context) (int64, error)) {
	s.queuedJobs = count
}
