// Package web has one job: serve the dashboard and the /docs reference
// that `npm run build` (make web) writes to dist/, embedded in the binary.
//
// A clone that has not built them embeds only dist/.gitkeep: the server
// then answers / with a page saying how to build the dashboard, and /docs
// stays the page the api package renders from the spec.
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist is what the binary embeds: the contents of dist/.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // "dist" is a valid name: never
	}
	return sub
}
