package api_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/testdata/recipes"
	"github.com/brain-template/brain/internal/testdata/todos"
)

// Two features declare types of the same names (View, CreateInput with
// an unnamed body, Output): huma's own namer panics on the second, and
// the server names each feature's schemas after its package.
func TestSchemaNamesOfTwoFeatures(t *testing.T) {
	func() {
		defer func() {
			if r := recover(); !strings.Contains(fmt.Sprint(r), "duplicate name") {
				t.Errorf("two features on huma's own namer: %v, want a panic for a duplicate name", r)
			}
		}()
		a := huma.NewAPI(huma.DefaultConfig("test", "1"), humachi.NewAdapter(chi.NewRouter()))
		recipes.Register(a)
		todos.Register(a)
	}()

	s := api.New(api.Config{Features: []api.Feature{
		func(s *api.Server) { recipes.Register(s.API) },
		func(s *api.Server) { todos.Register(s.API) },
	}})
	oapi := s.API.OpenAPI()
	for path, want := range map[string][2]string{"/recipes": {"RecipesCreateInputBody", "RecipesView"}, "/todos": {"TodosCreateInputBody", "TodosView"}} {
		op := oapi.Paths[path].Post
		body := op.RequestBody.Content["application/json"].Schema.Ref
		out := op.Responses["200"].Content["application/json"].Schema.Ref
		if body != "#/components/schemas/"+want[0] || out != "#/components/schemas/"+want[1] {
			t.Errorf("POST %s: body %s, response %s; want %v", path, body, out, want)
		}
	}
	if oapi.Components.Schemas.Map()["RecipesTag"] == nil {
		t.Error("recipes.RecipesTag is not RecipesTag: a name that leads with its package's is kept")
	}
}

// Page is a generic type of the platform's: api_test counts as api.
type Page[T any] struct{ Items []T }

func TestSchemaName(t *testing.T) {
	for _, c := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[recipes.View](), "RecipesView"},
		{reflect.TypeFor[*todos.View](), "TodosView"},
		{reflect.TypeFor[recipes.RecipesTag](), "RecipesTag"},
		{reflect.TypeFor[api.Error](), "Error"},
		{reflect.TypeFor[Page[recipes.View]](), "PageRecipesView"},
		{reflect.TypeFor[Page[[]*todos.View]](), "PageListTodosView"},
		{reflect.TypeFor[Page[int]](), "PageInt"},
		{reflect.TypeFor[huma.ErrorModel](), "ErrorModel"},
		{reflect.TypeFor[struct{ A int }](), "HintBody"}, // asked for here, in api_test: the platform's
	} {
		if got := api.SchemaName(c.t, "hintBody"); got != c.want {
			t.Errorf("%v: %s, want %s", c.t, got, c.want)
		}
	}
}
