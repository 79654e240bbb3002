// Package web serves the dashboard and the /docs reference that make web
// writes to dist/, embedded in the binary. Unbuilt, / says how to build them.
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist is what the binary embeds: the contents of dist/.
func Dist() fs.FS {
	sub, _ := fs.Sub(dist, "dist") // fails only on an invalid name
	return sub
}
