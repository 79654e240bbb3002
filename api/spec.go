package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
)

// errorContent is the body of every error response: the envelope.
func errorContent() map[string]*huma.MediaType {
	return map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Ref: "#/components/schemas/Error"}}}
}

// servers is the spec's one server: relative, so the spec names no host.
var servers = []*huma.Server{{URL: "/", Description: "The server this document was read from."}}

var contact = &huma.Contact{Name: apiTitle + " maintainers"}

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
		op.Responses[key] = &huma.Response{Description: desc, Content: errorContent()}
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

	once sync.Once
	body []byte
	etag string
	err  error
}

func (d *document) get() ([]byte, error) {
	d.once.Do(func() {
		d.renders.Add(1)
		d.body, d.err = d.render()
		sum := sha256.Sum256(d.body)
		d.etag = `"` + hex.EncodeToString(sum[:16]) + `"`
	})
	return d.body, d.err
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
	ServeBytes(w, r, d.body, d.etag)
}

// ServeBytes writes body, whose ETag is etag, with http.ServeContent. Range
// is ignored (many one-byte ranges would cost far more than the body).
func ServeBytes(w http.ResponseWriter, r *http.Request, body []byte, etag string) {
	w.Header().Set("ETag", etag)
	if im := r.Header.Get("If-Match"); im != "" && !slices.ContainsFunc(strings.Split(im, ","), func(t string) bool {
		t = strings.TrimSpace(t)
		return t == "*" || t == etag
	}) {
		WriteError(w, NewError(http.StatusPreconditionFailed, "If-Match names another version of this document"))
		return
	}
	if r.Header.Get("Range") != "" {
		r = r.Clone(r.Context())
		r.Header.Del("Range")
	}
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
