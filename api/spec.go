package api

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
)

// errorContent is the body of every error response: the envelope, with e,
// one the server sends, as its example.
func errorContent(e *Error) map[string]*huma.MediaType {
	return map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Ref: "#/components/schemas/Error"}, Example: e}}
}

// errorDescriptions say when each generic error status happens.
var errorDescriptions = map[int]string{
	http.StatusBadRequest:            "invalid-request: the body is not valid JSON, or is missing.",
	http.StatusRequestTimeout:        "request-timeout: the body did not arrive in time.",
	http.StatusConflict:              "conflict: the request clashes with what exists, such as a per-user cap that is full; the message says what to do.",
	http.StatusRequestEntityTooLarge: "payload-too-large: the body is larger than this operation accepts.",
	http.StatusUnsupportedMediaType:  "unsupported-media-type: the body is not application/json, or its charset is not UTF-8.",
	http.StatusUnprocessableEntity:   "unprocessable: a parameter or body member breaks the schema; details.errors says which and why.",
	http.StatusInternalServerError:   "internal: the server failed; the X-Request-Id header identifies the failure in its log.",
}

const refUnavailable = "#/components/responses/Unavailable"

// declareErrors documents each error response op can give in place of
// huma's catch-all "default", so generated clients get a typed error for each.
func declareErrors(op *huma.Operation) {
	if op.Responses == nil {
		op.Responses = map[string]*huma.Response{}
	}
	delete(op.Responses, "default")
	statuses := []int{http.StatusInternalServerError}
	if len(op.Parameters) > 0 || op.RequestBody != nil {
		statuses = append(statuses, http.StatusUnprocessableEntity)
	}
	if op.RequestBody != nil {
		statuses = append(statuses, http.StatusBadRequest, http.StatusRequestTimeout, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	}
	statuses = append(statuses, op.Errors...)
	for _, status := range statuses {
		key := strconv.Itoa(status)
		if status == http.StatusServiceUnavailable {
			op.Responses[key] = &huma.Response{Ref: refUnavailable}
			continue
		}
		desc, ok := errorDescriptions[status]
		if !ok {
			desc = CodeForStatus(status) + ": " + http.StatusText(status) + "."
		}
		if r := op.Responses[key]; r != nil && r.Ref != "" {
			continue // a shared response declared elsewhere
		}
		op.Responses[key] = &huma.Response{Description: desc, Content: errorContent(NewError(status, ""))}
	}
}

// Spec returns the OpenAPI 3.1 document as served at /openapi.json and
// committed as openapi.json: indented, deterministic, with a trailing newline.
func (s *Server) Spec() ([]byte, error) {
	b, err := json.MarshalIndent(s.API.OpenAPI(), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// document is a response rendered on its first request and served from memory.
type document struct {
	contentType string
	render      func() ([]byte, error)
	renders     *atomic.Int32 // for tests

	once         sync.Once
	body, gz     []byte // gz: body gzipped, for the clients that take it
	etag, gzETag string
	err          error
}

func (d *document) get() ([]byte, error) {
	d.once.Do(func() {
		d.renders.Add(1)
		if d.body, d.err = d.render(); d.err == nil {
			var b bytes.Buffer
			z, _ := gzip.NewWriterLevel(&b, gzip.BestCompression) // fails only on a bad level
			_, _ = z.Write(d.body)                                // a bytes.Buffer takes every write
			d.err = z.Close()
			d.gz = b.Bytes()
		}
		d.etag, d.gzETag = ETag(d.body, ""), ETag(d.body, "-gz")
	})
	return d.body, d.err
}

// ETag is a strong ETag of body; suffix names one of its encodings (-gz).
func ETag(body []byte, suffix string) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + suffix + `"`
}

// serve writes the document with a strong ETag and Cache-Control: no-cache.
func (d *document) serve(w http.ResponseWriter, r *http.Request) {
	if _, err := d.get(); err != nil {
		Logger(r.Context()).Error("render "+r.URL.Path, "error", err)
		WriteError(w, NewError(http.StatusInternalServerError, ""))
		return
	}
	h := w.Header()
	h.Set("Content-Type", d.contentType)
	h.Set("Cache-Control", "no-cache")
	ServeBytes(w, r, d.body, d.etag, d.gz, d.gzETag)
}

// ServeBytes writes body, whose ETag is etag, with http.ServeContent, or
// gz, body's gzip encoding (if not nil), to a client that takes gzip: each
// with its own ETag. Range is ignored (many one-byte ranges would cost far
// more than the body).
func ServeBytes(w http.ResponseWriter, r *http.Request, body []byte, etag string, gz []byte, gzETag string) {
	if gz != nil {
		w.Header().Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			body, etag = gz, gzETag
			w.Header().Set("Content-Encoding", "gzip")
		}
	}
	w.Header().Set("ETag", etag)
	if im := r.Header.Get("If-Match"); im != "" && !slices.ContainsFunc(strings.Split(im, ","), func(t string) bool {
		t = strings.TrimSpace(t)
		return t == "*" || t == etag
	}) {
		w.Header().Del("Content-Encoding") // the envelope is not the encoded body
		WriteError(w, NewError(http.StatusPreconditionFailed, "If-Match names another version of this document"))
		return
	}
	if r.Header.Get("Range") != "" {
		r = r.Clone(r.Context())
		r.Header.Del("Range")
	}
	// ServeContent leaves out the length of an encoded body: it is body's.
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// serveDocuments routes the spec (JSON and YAML) and the reference: ui at
// /docs, or else the page rendered from the spec.
func (s *Server) serveDocuments(r chi.Router, ui http.Handler) {
	specJSON := &document{contentType: "application/json", render: s.Spec, renders: &s.renders}
	specYAML := &document{contentType: "application/yaml", render: s.API.OpenAPI().YAML, renders: &s.renders}
	docs := &document{contentType: "text/html; charset=utf-8", renders: &s.renders, render: func() ([]byte, error) {
		spec, err := specJSON.get()
		if err != nil {
			return nil, err
		}
		return renderDocs(spec)
	}}
	r.Get("/openapi.json", specJSON.serve)
	r.Get("/openapi.yaml", specYAML.serve)
	if ui != nil {
		r.Get("/docs", ui.ServeHTTP)
		r.Get("/docs/*", ui.ServeHTTP)
		return
	}
	r.Get("/docs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		docs.serve(w, r)
	})
}

// docsPage is the reference page at /docs, rendered from /openapi.json with
// no script and nothing from another host. The template visits maps in
// sorted key order: tags, statuses, headers, extensions and schemas.
type docsPage struct {
	Info struct {
		Title, Version, Description string
	}
	Paths      map[string]map[string]json.RawMessage
	Components struct{ Schemas map[string]json.RawMessage }
	Groups     map[string][]docsOperation `json:"-"` // by first tag
}

// docsOperation is one operation of the spec, as the page shows it.
type docsOperation struct {
	Method, Path string
	ID           string `json:"operationId"`
	Summary      string
	Description  string
	Tags         []string
	Parameters   []struct {
		Name, In, Description string
		Required              bool
		Schema                json.RawMessage
	}
	RequestBody *struct {
		Content map[string]struct{ Schema json.RawMessage }
	} `json:"requestBody"`
	Responses map[string]struct {
		Ref         string `json:"$ref"`
		Description string
		Headers     map[string]json.RawMessage
		Content     map[string]struct{ Schema json.RawMessage }
	}
	Extensions map[string]json.RawMessage `json:"-"` // the x- members
}

var methodOrder = []string{"get", "post", "put", "patch", "delete", "head", "options", "trace"}

// buildDocsPage decodes the spec and arranges it for the page: operations
// by first tag, path and method, then the schemas.
func buildDocsPage(spec []byte) (*docsPage, error) {
	page := &docsPage{Groups: map[string][]docsOperation{}}
	if err := json.Unmarshal(spec, page); err != nil {
		return nil, err
	}
	for path, item := range page.Paths {
		for method, raw := range item {
			op := docsOperation{Method: method, Path: path}
			if err := errors.Join(json.Unmarshal(raw, &op), json.Unmarshal(raw, &op.Extensions)); err != nil {
				return nil, err
			}
			maps.DeleteFunc(op.Extensions, func(k string, _ json.RawMessage) bool { return !strings.HasPrefix(k, "x-") })
			tag := "Other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			page.Groups[tag] = append(page.Groups[tag], op)
		}
	}
	for _, ops := range page.Groups {
		slices.SortFunc(ops, func(a, b docsOperation) int {
			if c := strings.Compare(a.Path, b.Path); c != 0 {
				return c
			}
			return slices.Index(methodOrder, a.Method) - slices.Index(methodOrder, b.Method)
		})
	}
	return page, nil
}

// formatJSON is raw compact, or indented.
func formatJSON(raw json.RawMessage, indent bool) string {
	var b bytes.Buffer
	var err error
	if indent {
		err = json.Indent(&b, raw, "", "  ")
	} else {
		err = json.Compact(&b, raw)
	}
	if err != nil {
		return string(raw)
	}
	return b.String()
}

// schemaBody is the first media type of content and its schema, or else ref.
func schemaBody(content map[string]struct{ Schema json.RawMessage }, ref string) string {
	for ct, c := range content {
		return ct + " " + formatJSON(c.Schema, false)
	}
	return ref
}

var schemaRef = regexp.MustCompile(`&#34;#/components/schemas/(.*?)&#34;`)

// schemaLink turns a "#/components/schemas/X" reference inside rendered
// JSON into an anchor on this page.
func schemaLink(s string) template.HTML {
	esc := template.HTMLEscapeString(s)
	return template.HTML(schemaRef.ReplaceAllString(esc, `<a href="#schema-$1">&#34;#/components/schemas/$1&#34;</a>`))
}

var docsTemplate = template.Must(template.New("docs").Funcs(template.FuncMap{
	"schemaLink": schemaLink, "schemaBody": schemaBody, "upper": strings.ToUpper,
	"compact": func(raw json.RawMessage) string { return formatJSON(raw, false) },
	"indent":  func(raw json.RawMessage) string { return formatJSON(raw, true) },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Info.Title}} API reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;display:flex;color:#1d2330}
nav{width:18rem;flex:none;height:100vh;position:sticky;top:0;overflow:auto;background:#f4f6fa;padding:1rem;box-sizing:border-box;border-right:1px solid #dde2ea}
nav a{display:block;color:#1d2330;text-decoration:none;font-size:13px;padding:2px 0}
main{padding:1.5rem 2.5rem;max-width:60rem;min-width:0}
h2{border-bottom:1px solid #dde2ea;padding-bottom:.3rem;margin-top:2.5rem}
section.op{border:1px solid #dde2ea;border-radius:6px;padding:.2rem 1rem 1rem;margin:1.2rem 0}
.m{font:600 12px monospace;padding:2px 6px;border-radius:4px;color:#fff;background:#5a6478}
.get{background:#2f7d4f}.post{background:#2b5fb4}.put,.patch{background:#a86b12}.delete{background:#b42b2b}
code,pre{font:13px/1.4 ui-monospace,monospace}pre{background:#f4f6fa;padding:.6rem;overflow:auto;border-radius:4px}
table{border-collapse:collapse;width:100%;font-size:14px}td,th{border-bottom:1px solid #e6e9ef;text-align:left;padding:4px 6px;vertical-align:top}
td code{word-break:break-all}
</style></head><body>
<nav><strong>{{.Info.Title}} {{.Info.Version}}</strong><p><a href="/openapi.json">openapi.json</a><a href="/openapi.yaml">openapi.yaml</a></p>
{{range $tag, $ops := .Groups}}<p><strong>{{$tag}}</strong>{{range $ops}}<a href="#op-{{.ID}}"><span class="m {{.Method}}">{{upper .Method}}</span> {{.Path}}</a>{{end}}</p>{{end}}
<p><strong>Schemas</strong>{{range $name, $_ := .Components.Schemas}}<a href="#schema-{{$name}}">{{$name}}</a>{{end}}</p></nav>
<main><h1>{{.Info.Title}} API reference <small>v{{.Info.Version}}</small></h1><p style="white-space:pre-line">{{.Info.Description}}</p>
{{range $tag, $ops := .Groups}}<h2>{{$tag}}</h2>{{range $ops}}
<section class="op" id="op-{{.ID}}"><h3><span class="m {{.Method}}">{{upper .Method}}</span> <code>{{.Path}}</code> — {{.Summary}}</h3>
<p><small>operationId <code>{{.ID}}</code></small></p>{{if .Description}}<p style="white-space:pre-line">{{.Description}}</p>{{end}}
{{if .Parameters}}<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>schema</th><th>description</th></tr>
{{range .Parameters}}<tr><td><code>{{.Name}}</code>{{if .Required}} *{{end}}</td><td>{{.In}}</td><td><code>{{compact .Schema}}</code></td><td>{{.Description}}</td></tr>{{end}}</table>{{end}}
{{with .RequestBody}}{{with schemaBody .Content ""}}<h4>Request body</h4><pre>{{schemaLink .}}</pre>{{end}}{{end}}
<h4>Responses</h4><table><tr><th>status</th><th>description</th><th>body</th><th>headers</th></tr>
{{range $status, $r := .Responses}}<tr><td><code>{{$status}}</code></td><td>{{.Description}}</td><td><code>{{schemaLink (schemaBody .Content .Ref)}}</code></td><td>{{range $h, $_ := .Headers}}<code>{{$h}}</code> {{end}}</td></tr>{{end}}</table>
{{range $name, $x := .Extensions}}<h4><code>{{$name}}</code></h4><pre>{{indent $x}}</pre>{{end}}
</section>{{end}}{{end}}
<h2>Schemas</h2>{{range $name, $s := .Components.Schemas}}<h3 id="schema-{{$name}}">{{$name}}</h3><pre>{{schemaLink (indent $s)}}</pre>{{end}}
</main></body></html>
`))

// renderDocs renders the reference page of spec, the served openapi.json.
func renderDocs(spec []byte) ([]byte, error) {
	page, err := buildDocsPage(spec)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := docsTemplate.Execute(&buf, page); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// acceptsGzip reports whether an Accept-Encoding header names gzip with a
// q above 0 (RFC 9110). A bare * gets the plain body, which is always allowed.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			for _, p := range strings.Split(params, ";") {
				if k, v, _ := strings.Cut(strings.TrimSpace(p), "="); strings.EqualFold(k, "q") {
					f, err := strconv.ParseFloat(v, 64)
					return err != nil || f > 0
				}
			}
			return true
		}
	}
	return false
}
