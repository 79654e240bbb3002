package api

import (
	"net/http"

	"github.com/danielgtaylor/huma/v2"
)

// refuseEmptyParams answers 422 to an empty number or boolean query
// parameter ("?limit="), which huma would take for one left out.
func refuseEmptyParams(op *huma.Operation, ps *planes) {
	var names []string
	for _, p := range op.Parameters {
		if p.In == "query" && p.Schema != nil && (p.Schema.Type == huma.TypeInteger || p.Schema.Type == huma.TypeNumber || p.Schema.Type == huma.TypeBoolean) {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return
	}
	op.Middlewares = append(op.Middlewares, func(ctx huma.Context, next func(huma.Context)) {
		u := ctx.URL()
		if u.RawQuery == "" {
			next(ctx)
			return
		}
		var empty []FieldError
		query := u.Query()
		for _, name := range names {
			if v, ok := query[name]; ok && v[0] == "" { // huma reads the first value
				empty = append(empty, FieldError{Location: "query." + name, Message: "empty: send a value, or leave the parameter out for its default"})
			}
		}
		if len(empty) > 0 {
			writeHumaError(ps.api, ctx, NewError(http.StatusUnprocessableEntity, "the request is not valid: see details.errors", empty...))
			return
		}
		next(ctx)
	})
}
