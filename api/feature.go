package api

import (
	"context"
	"log/slog"
	"net/http"
	"slices"

	"github.com/brain-template/brain/api/middleware"
	"github.com/danielgtaylor/huma/v2"
)

// A Feature registers a feature's operations on s.API ([WithAccess],
// [WithBudget], [Tag]); [New] calls each of Config.Features in order.
type Feature func(s *Server)

// Tag declares the spec's tag name with its description, once, and returns
// the operation's Tags:
//
//	tags := api.Tag(s.API, "Bookmarks", "URLs you keep.")
func Tag(api huma.API, name, description string) []string {
	oapi := api.OpenAPI()
	if !slices.ContainsFunc(oapi.Tags, func(t *huma.Tag) bool { return t.Name == name }) {
		oapi.Tags = append(oapi.Tags, &huma.Tag{Name: name, Description: description})
	}
	return []string{name}
}

// Describe adds a paragraph on a feature to the spec's description:
//
//	api.Describe(s, "Bookmarks: keep the URLs you want to read again.")
func Describe(s *Server, text string) {
	s.described = append(s.described, text)
	s.API.OpenAPI().Info.Description = describe(s.described)
}

// MalformedBody is the 400 of a body that is not JSON, as huma answers it.
func MalformedBody(details ...FieldError) *Error {
	return NewError(http.StatusBadRequest, msgMalformedBody, details...)
}

// Metrics is the server's registry (Config.Metrics), or nil.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Logger is the logger of ctx: a request's, else [WithLogger]'s, else slog.Default.
func Logger(ctx context.Context) *slog.Logger { return logger(ctx) }

// WithLogger returns ctx carrying l, for [Logger] outside a request.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return middleware.WithLogger(ctx, l)
}
