// This file is how the platform's operations tell a user, live, what was
// done to its account: each publishes an event by name, which the stream
// plane (package streams, which imports this package and is not imported
// by it) declares in the spec and carries to the user's
// GET /api/v1/events.
package api

import "context"

// The events the platform's operations publish, by name.
const (
	// EventAPIKeyCreated: the caller created an API key; its data is the
	// key's APIKeyView.
	EventAPIKeyCreated = "apikey.created"
	// EventAPIKeyDeleted: the caller deleted an API key; its data is a
	// DeletedEvent.
	EventAPIKeyDeleted = "apikey.deleted"
)

// DeletedEvent names what was deleted.
type DeletedEvent struct {
	ID string `json:"id" doc:"The id of what was deleted."`
}

// A publisher sends an event named event, with data, to user's streams.
type publisher func(ctx context.Context, user, event string, data any)

// PublishEvents makes publish the way the platform's operations send
// their events (EventAPIKeyCreated, EventAPIKeyDeleted) to a user's
// streams: the stream plane gives its hub's. Until it does, and on a
// server no stream plane serves, they go nowhere. Call it from a
// [Feature], before the server serves.
func (s *Server) PublishEvents(publish func(ctx context.Context, user, event string, data any)) {
	s.events = publish
}

// publishEvent sends an event of the platform's operations through what
// PublishEvents gave, if anything. It never fails the request that
// caused it: the request has succeeded.
func (s *Server) publishEvent(ctx context.Context, user, event string, data any) {
	if s.events != nil {
		s.events(ctx, user, event, data)
	}
}
