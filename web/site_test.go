// Tests of the dashboard's handler alone, on an fstest.MapFS build: what
// each kind of file is sent with, the SPA fallback, gzip, and the paths it
// never serves.

package web_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/brain-template/brain/web"
)

const (
	indexHTML = `<!doctype html><div id="root"></div><script type="module" src="/assets/index-abc123.js"></script>`
	appJS     = `console.log("the dashboard");`
	docsHTML  = `<!doctype html><title>API reference</title><script src="/docs/swagger-ui-bundle.js"></script>`
)

func gz(tb testing.TB, s string) []byte {
	tb.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// build is a built dist/: the dashboard, a .gz sibling, the docs UI and
// the placeholder.
func build(tb testing.TB) fstest.MapFS {
	return fstest.MapFS{
		".gitkeep":                     {},
		"index.html":                   {Data: []byte(indexHTML)},
		"favicon.svg":                  {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
		"assets/index-abc123.js":       {Data: []byte(appJS)},
		"assets/index-abc123.js.gz":    {Data: gz(tb, appJS)},
		"assets/index-abc123.css":      {Data: []byte(`body{margin:0}`)},
		"img/logo.svg":                 {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
		"docs/index.html":              {Data: []byte(docsHTML)},
		"docs/swagger-ui-bundle.js":    {Data: []byte(`var SwaggerUIBundle;`)},
		"docs/swagger-ui-bundle.js.gz": {Data: gz(tb, `var SwaggerUIBundle;`)},
		"docs/swagger-ui.css":          {Data: []byte(`.swagger-ui{}`)},
	}
}

func mustSite(tb testing.TB, fsys fstest.MapFS) *web.Site {
	tb.Helper()
	s, err := web.New(fsys)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func get(h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestCacheRulesPerKindOfFile(t *testing.T) {
	s := mustSite(t, build(t))
	for _, c := range []struct {
		path, cache, contentType, body string
	}{
		{"/", "no-cache", "text/html", indexHTML},
		{"/index.html", "no-cache", "text/html", indexHTML},
		{"/favicon.svg", "no-cache", "image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg"/>`},
		{"/assets/index-abc123.js", "public, max-age=31536000, immutable", "javascript", appJS},
		{"/assets/index-abc123.css", "public, max-age=31536000, immutable", "text/css", `body{margin:0}`},
		{"/keys/42", "no-cache", "text/html", indexHTML}, // the SPA fallback
	} {
		w := get(s, "GET", c.path)
		if w.Code != 200 || w.Body.String() != c.body {
			t.Errorf("GET %s = %d %q, want 200 %q", c.path, w.Code, w.Body, c.body)
		}
		if got := w.Header().Get("Cache-Control"); got != c.cache {
			t.Errorf("GET %s: Cache-Control %q, want %q", c.path, got, c.cache)
		}
		if got := w.Header().Get("Content-Type"); !strings.Contains(got, c.contentType) {
			t.Errorf("GET %s: Content-Type %q, want one with %q", c.path, got, c.contentType)
		}
		if csp := w.Header().Get("Content-Security-Policy"); csp != web.CSP {
			t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
	}
}

func TestSPAFallbackNeverStandsInForAFile(t *testing.T) {
	s := mustSite(t, build(t))
	// An asset of an older build is gone: index.html there would be kept
	// for a year, and run as a script.
	for _, p := range []string{"/assets/index-old.js", "/assets/", "/assets", "/assets/index-abc123.js.gz", "/api/v1/nope", "/api", "/docs/x", "/favicon.ico", "/robots.txt", "/openapi.yml", "/keys/report.csv"} {
		if w := get(s, "GET", p); w.Code != 404 || strings.Contains(w.Body.String(), "root") {
			t.Errorf("GET %s = %d %q, want a 404", p, w.Code, w.Body)
		}
	}
	// A directory is never listed: the app's route it may be gets index.html.
	for _, p := range []string{"/img", "/img/"} {
		if w := get(s, "GET", p); w.Code != 200 || w.Body.String() != indexHTML {
			t.Errorf("GET %s = %d %q, want index.html", p, w.Code, w.Body)
		}
	}
}

func TestHeadAndRevalidation(t *testing.T) {
	s := mustSite(t, build(t))
	w := get(s, "HEAD", "/assets/index-abc123.js")
	if w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Length") != strconv.Itoa(len(appJS)) {
		t.Fatalf("HEAD = %d, %d bytes, Content-Length %q", w.Code, w.Body.Len(), w.Header().Get("Content-Length"))
	}
	w = get(s, "HEAD", "/some/route")
	if w.Code != 200 || w.Body.Len() != 0 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("HEAD of the fallback = %d, %d bytes, %q", w.Code, w.Body.Len(), w.Header().Get("Content-Type"))
	}
	etag := get(s, "GET", "/").Header().Get("ETag")
	if etag == "" {
		t.Fatal("index.html has no ETag")
	}
	if w := get(s, "GET", "/", "If-None-Match", etag); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Errorf("GET / with its ETag = %d %q, want 304", w.Code, w.Body)
	}
	if w := get(s, "GET", "/some/route", "If-None-Match", etag); w.Code != http.StatusNotModified {
		t.Errorf("the fallback with index.html's ETag = %d, want 304", w.Code)
	}
	if w := get(s, "POST", "/"); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST / = %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
}

func TestGzipSibling(t *testing.T) {
	s := mustSite(t, build(t))
	for _, c := range []struct {
		accept string
		gzip   bool
	}{{"gzip, deflate, br", true}, {"br;q=1.0, gzip;q=0.5", true}, {"*", false}, {"GZIP;q=0.001", true}, {"gzip;q=0", false}, {"gzip; q=0.0", false}, {"gzip;Q=0", false}, {"gzip;x=1;q=0", false}, {"gzip;q=0, *", false}, {"*, gzip;q=0", false}, {"*;q=0", false}, {"", false}, {"identity", false}} {
		w := get(s, "GET", "/assets/index-abc123.js", "Accept-Encoding", c.accept)
		body := w.Body.String()
		if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(len(body)) {
			t.Errorf("Accept-Encoding %q: Content-Length %q, body %d bytes", c.accept, cl, len(body))
		}
		if c.gzip {
			r, err := gzip.NewReader(w.Body)
			if err != nil {
				t.Fatalf("Accept-Encoding %q: %v", c.accept, err)
			}
			b, _ := io.ReadAll(r)
			body = string(b)
		}
		if got := w.Header().Get("Content-Encoding") == "gzip"; got != c.gzip || body != appJS {
			t.Errorf("Accept-Encoding %q: gzip %v, body %q", c.accept, got, body)
		}
		if w.Header().Get("Vary") != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: Vary %q", c.accept, w.Header().Get("Vary"))
		}
	}
	plain := get(s, "GET", "/assets/index-abc123.js").Header().Get("ETag")
	zipped := get(s, "GET", "/assets/index-abc123.js", "Accept-Encoding", "gzip").Header().Get("ETag")
	if plain == zipped {
		t.Errorf("both encodings have the ETag %s", plain)
	}
	if w := get(s, "GET", "/favicon.svg", "Accept-Encoding", "gzip"); w.Header().Get("Content-Encoding") != "" || w.Header().Get("Vary") != "" {
		t.Errorf("a file without a .gz: Content-Encoding %q, Vary %q", w.Header().Get("Content-Encoding"), w.Header().Get("Vary"))
	}
}

func TestDocsHandler(t *testing.T) {
	s := mustSite(t, build(t))
	docs := s.Docs()
	if docs == nil {
		t.Fatal("Docs() is nil with docs/index.html built")
	}
	for _, p := range []string{"/docs", "/docs/", "/docs/index.html"} {
		if w := get(docs, "GET", p); w.Code != 200 || w.Body.String() != docsHTML || w.Header().Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s = %d %q %q", p, w.Code, w.Header().Get("Cache-Control"), w.Body)
		}
	}
	if w := get(docs, "GET", "/docs/swagger-ui.css"); w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/css") {
		t.Errorf("GET /docs/swagger-ui.css = %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	for _, p := range []string{"/docs/nope.js", "/docs/../index.html", "/index.html", "/docs/swagger-ui-bundle.js.gz"} {
		if w := get(docs, "GET", p); w.Code != 404 {
			t.Errorf("GET %s = %d, want 404", p, w.Code)
		}
	}
	b := build(t)
	delete(b, "docs/index.html")
	if mustSite(t, b).Docs() != nil {
		t.Error("Docs() is not nil without docs/index.html")
	}
}

// The handler reads a build through fs.FS, which has no name above its
// root: on disk, a go.mod beside dist/ stays out of reach however the
// path is spelled.
func TestPathTraversalOnDisk(t *testing.T) {
	root := t.TempDir()
	const secret = "module example.com/secret"
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"dist/index.html": indexHTML, "dist/assets/a.js": appJS, "dist/.env": "TOKEN=1"} {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := web.New(os.DirFS(filepath.Join(root, "dist")))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	for _, p := range []string{"/..%2f..%2fgo.mod", "/..%2fgo.mod", "/assets/../../go.mod", "/assets/..%2f..%2fgo.mod", "/../go.mod", "/.env", "/assets//a.js", `/assets\..\..\go.mod`} {
		req, _ := http.NewRequest("GET", srv.URL+p, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 404 || strings.Contains(string(b), "secret") || strings.Contains(string(b), "TOKEN") {
			t.Errorf("GET %s = %d %q, want a 404", p, res.StatusCode, b)
		}
	}
}

func TestNotBuilt(t *testing.T) {
	s := mustSite(t, fstest.MapFS{".gitkeep": {}})
	if s.Built() || s.Docs() != nil {
		t.Fatalf("Built %v, Docs %v: nothing is built", s.Built(), s.Docs())
	}
	w := get(s, "GET", "/")
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET / = %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	for _, want := range []string{"not built", "make web", "make run", `href="/docs"`} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("the page lacks %q:\n%s", want, w.Body)
		}
	}
	if w := get(s, "GET", "/keys/42"); w.Code != 404 || w.Header().Get("Content-Type") != "application/json" || !strings.Contains(w.Body.String(), "not built") {
		t.Errorf("GET /keys/42 = %d %s, want the 404 envelope saying the dashboard is not built", w.Code, w.Body)
	}
	if w := get(s, "HEAD", "/"); w.Code != 200 || w.Body.Len() != 0 {
		t.Errorf("HEAD / = %d, %d bytes", w.Code, w.Body.Len())
	}
}

// The build the binary embeds reads without error, built or not.
func TestEmbeddedBuild(t *testing.T) {
	s, err := web.New(web.Dist())
	if err != nil {
		t.Fatal(err)
	}
	if w := get(s, "GET", "/"); w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Errorf("GET / = %d %q", w.Code, w.Header().Get("Content-Type"))
	}
}
