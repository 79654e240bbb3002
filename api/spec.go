package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"
)

// errorSchemaRef points at the envelope's schema. huma registers the schema
// under this name because [Error] is the type huma.NewError returns.
const errorSchemaRef = "#/components/schemas/Error"

// errorDescriptions say when each generic error status happens; operations
// that raise other statuses declare them with huma.Operation.Errors.
var errorDescriptions = map[int]string{
	http.StatusBadRequest:            "invalid-request: the body is not valid JSON, or is missing.",
	http.StatusRequestTimeout:        "request-timeout: the body did not arrive in time.",
	http.StatusRequestEntityTooLarge: "payload-too-large: the body is larger than this operation accepts.",
	http.StatusUnsupportedMediaType:  "unsupported-media-type: the body is not application/json.",
	http.StatusUnprocessableEntity:   "unprocessable: a parameter or body member breaks the schema; details.errors says which and why.",
	http.StatusInternalServerError:   "internal: the server failed; the X-Request-Id header identifies the failure in its log.",
}

// refUnavailable is the one 503 response, in the spec's components, that
// every operation able to answer 503 refers to.
const refUnavailable = "#/components/responses/Unavailable"

// declareUnavailable adds the 503 response to the spec's components: the
// envelope and Retry-After (the header declareComponents declares).
func declareUnavailable(c *huma.Components) {
	if c.Responses == nil {
		c.Responses = map[string]*huma.Response{}
	}
	c.Responses["Unavailable"] = &huma.Response{
		Description: "unavailable: not the client's fault. A store brain depends on (the database, or Redis for rate limits) does not answer or is too slow, " +
			"or too many passwords are being checked at once. Retry after Retry-After seconds. On /ready, details.errors lists the checks that failed.",
		Headers: map[string]*huma.Header{"Retry-After": {Ref: refHeader + "Retry-After"}},
		Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Ref: errorSchemaRef}}},
	}
}

// declareErrors is an OnAddOperation hook that documents the error
// responses every operation can give, each with the envelope. It replaces
// huma's catch-all "default" response with explicit statuses, so generated
// clients get a typed error for each.
func declareErrors(_ *huma.OpenAPI, op *huma.Operation) {
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
		op.Responses[key] = &huma.Response{
			Description: desc,
			Content: map[string]*huma.MediaType{
				"application/json": {Schema: &huma.Schema{Ref: errorSchemaRef}},
			},
		}
	}
}

// Spec returns the OpenAPI 3.1 document as served at /openapi.json and
// committed as openapi.json: two-space indented, with a trailing newline,
// and deterministic (huma writes maps with sorted keys).
func (s *Server) Spec() ([]byte, error) {
	compact, err := json.Marshal(s.API.OpenAPI())
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(compact) * 2)
	if err := json.Indent(&buf, compact, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

func (s *Server) serveSpecJSON(w http.ResponseWriter, r *http.Request) {
	b, err := s.Spec()
	s.writeSpec(w, r, "application/json", b, err)
}

func (s *Server) serveSpecYAML(w http.ResponseWriter, r *http.Request) {
	b, err := s.API.OpenAPI().YAML()
	s.writeSpec(w, r, "application/yaml", b, err)
}

func (s *Server) writeSpec(w http.ResponseWriter, r *http.Request, contentType string, b []byte, err error) {
	if err != nil {
		logger(r.Context()).Error("render spec", "error", err)
		WriteError(w, NewError(http.StatusInternalServerError, ""))
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}
