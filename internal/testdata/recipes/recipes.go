// Package recipes is a feature of api's tests of schema names. Package
// todos declares types of the same names: View, CreateInput, Output.
package recipes

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
)

// View is a recipe.
type View struct {
	Name string       `json:"name" maxLength:"100"`
	Tags []RecipesTag `json:"tags" maxItems:"10"`
}

// RecipesTag leads with its package's name already.
type RecipesTag struct {
	Name string `json:"name" maxLength:"20"`
}

// CreateInput's body is an unnamed struct.
type CreateInput struct {
	Body struct {
		Name string `json:"name" maxLength:"100"`
	}
}

// Output is one recipe.
type Output struct{ Body View }

// Register adds POST /recipes.
func Register(api huma.API) {
	huma.Register(api, huma.Operation{OperationID: "create-recipe", Method: http.MethodPost, Path: "/recipes"},
		func(context.Context, *CreateInput) (*Output, error) { return &Output{}, nil })
}
