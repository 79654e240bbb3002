// Package todos is a feature of api's tests of schema names. Package
// recipes declares types of the same names: View, CreateInput, Output.
package todos

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
)

// View is a todo.
type View struct {
	Title string `json:"title" maxLength:"100"`
	Done  bool   `json:"done"`
}

// CreateInput's body is an unnamed struct.
type CreateInput struct {
	Body struct {
		Title string `json:"title" maxLength:"100"`
	}
}

// Output is one todo.
type Output struct{ Body View }

// Register adds POST /todos.
func Register(api huma.API) {
	huma.Register(api, huma.Operation{OperationID: "create-todo", Method: http.MethodPost, Path: "/todos"},
		func(context.Context, *CreateInput) (*Output, error) { return &Output{}, nil })
}
