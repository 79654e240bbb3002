package api

import (
	"net/http"
	"path"
	"strings"
)

// isStatic reports whether a request no route matched is one for
// Config.Static: a GET or HEAD outside /api/ and /docs/, however spelled
// ("/x/../api/v1" and "/api%2fv1" are the API's).
func isStatic(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	for _, p := range []string{r.URL.Path, path.Clean("/" + r.URL.Path)} {
		for _, reserved := range []string{"/api", "/docs"} {
			if p == reserved || strings.HasPrefix(p, reserved+"/") {
				return false
			}
		}
	}
	return true
}
