// Package web serves the dashboard and the /docs reference that make web
// writes to dist/, embedded in the binary. Unbuilt, / says how to build them.
package web

import (
	"cmp"
	"embed"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/brain-template/brain/api"
)

//go:embed all:dist
var dist embed.FS

// Dist is what the binary embeds: the contents of dist/.
func Dist() fs.FS {
	sub, _ := fs.Sub(dist, "dist") // fails only on an invalid name
	return sub
}

// Cache-Control: Vite names the files under assets/ by a hash of their bytes,
// so they keep a year; every other file is revalidated by its ETag.
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheRevalidate = "no-cache"
)

// CSP is the Content-Security-Policy of every file served: this origin only,
// no inline script; inline styles and data: images, as React and Swagger UI use them.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
	"font-src 'self' data:; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Site serves the files of one build: it is the dashboard's handler, and
// Docs the docs UI's.
type Site struct {
	files map[string]*file
}

type file struct {
	body, gz           []byte // gz: its .gz sibling, if any
	etag, gzETag       string
	contentType, cache string
}

// New reads every file of the build fsys into memory. Dot-led names are never
// served, and a name.gz beside name is name's gzip encoding.
func New(fsys fs.FS) (*Site, error) {
	s := &Site{files: map[string]*file{}}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() || hidden(name) {
			return nil
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		ct := cmp.Or(mime.TypeByExtension(path.Ext(name)), "application/octet-stream")
		cache := cacheRevalidate
		if strings.HasPrefix(name, "assets/") {
			cache = cacheImmutable
		}
		s.files[name] = &file{body: body, etag: api.ETag(body, ""), contentType: ct, cache: cache}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: read the build: %w", err)
	}
	for name, f := range s.files {
		if orig, ok := strings.CutSuffix(name, ".gz"); ok && s.files[orig] != nil {
			s.files[orig].gz, s.files[orig].gzETag = f.body, api.ETag(s.files[orig].body, "-gz")
			delete(s.files, name)
		}
	}
	return s, nil
}

// Built reports whether the build has the dashboard (index.html).
func (s *Site) Built() bool { return s.files["index.html"] != nil }

// ServeHTTP serves a file of the build by its path, else index.html (the app
// routes its own paths). Missing assets, file-like names, /api/, /docs/ and
// unclean paths are 404s in the API's envelope.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !getOrHead(w, r) {
		return
	}
	name, ok := nameOf(r.URL.Path)
	switch {
	case !ok || name == "api" || strings.HasPrefix(name, "api/") || name == "docs" || strings.HasPrefix(name, "docs/"):
		notFound(w, "nothing here")
	case s.files[name] != nil:
		s.files[name].serve(w, r)
	case name == "assets" || strings.HasPrefix(name, "assets/") || (name != "" && strings.Contains(path.Base(name), ".")):
		notFound(w, "the dashboard has no file of this name")
	case s.Built():
		s.files["index.html"].serve(w, r)
	case name == "" || name == "index.html":
		notBuilt.serve(w, r)
	default:
		notFound(w, "the dashboard is not built, so it has no pages: / says how to build it")
	}
}

func notFound(w http.ResponseWriter, msg string) {
	api.WriteError(w, api.NewError(http.StatusNotFound, msg))
}

// Docs returns the handler of /docs and its files, or nil when the build
// has no docs UI.
func (s *Site) Docs() http.Handler {
	if s.files["docs/index.html"] == nil {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !getOrHead(w, r) {
			return
		}
		name, ok := nameOf(r.URL.Path)
		if name == "docs" {
			name = "docs/index.html"
		}
		if f := s.files[name]; ok && strings.HasPrefix(name, "docs/") && f != nil {
			f.serve(w, r)
			return
		}
		notFound(w, "the API reference has no file of this name")
	})
}

// serve writes f, gzipped when it can and the client takes gzip.
func (f *file) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", f.cache)
	h.Set("Content-Security-Policy", CSP)
	api.ServeBytes(w, r, f.body, f.etag, f.gz, f.gzETag)
}

// getOrHead answers 405 to any other method than GET and HEAD.
func getOrHead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	api.WriteError(w, api.NewError(http.StatusMethodNotAllowed, "this method is not allowed here; the Allow header lists what is"))
	return false
}

// nameOf is the file name of a URL path ("/" → ""), and false for a path
// that is not a clean name.
func nameOf(urlPath string) (string, bool) {
	name, ok := strings.CutPrefix(urlPath, "/")
	name = strings.TrimSuffix(name, "/")
	if !ok || name != "" && (!fs.ValidPath(name) || strings.Contains(name, `\`) || hidden(name)) {
		return "", false
	}
	return name, true
}

func hidden(name string) bool {
	return slices.ContainsFunc(strings.Split(name, "/"), func(e string) bool { return strings.HasPrefix(e, ".") && e != "." })
}
