package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/internal/logsample"
	"github.com/brain-template/brain/internal/product"
	"github.com/danielgtaylor/huma/v2"
)

// Error is the API's one error envelope, of every non-2xx response:
// {"code", "message", "details"}. It never carries a request body, a secret
// or an internal error string.
type Error struct {
	status int
	cause  error       // what the log gets for a 5xx; never serialized
	header http.Header // sent with the envelope: Retry-After on a 503

	Code    string       `json:"code" pattern:"^[a-z]+(-[a-z]+)*$" maxLength:"64" example:"invalid-request" doc:"Stable, kebab-case error code derived from the HTTP status, or one an operation sends in its place (its description says when); switch on this, not on the message. The enum lists every code this server sends."`
	Message string       `json:"message" maxLength:"1024" example:"the request body is not valid JSON" doc:"Plain-English explanation for a person."`
	Details ErrorDetails `json:"details" doc:"Structured details; which members appear depends on the code."`
}

// ErrorDetails holds the structured part of an [Error]; each member is optional.
type ErrorDetails struct {
	Errors []FieldError `json:"errors,omitempty" maxItems:"100" nullable:"false" doc:"For invalid-request and unprocessable: each problem and where it is."`

	Scope       string `json:"scope,omitempty" enum:"session,ip,apikey,stream,login" doc:"rate-limited: the plane that refused the request."`
	Policy      string `json:"policy,omitempty" maxLength:"64" doc:"rate-limited: the budget's name, as in the RateLimit-Policy header."`
	Limit       int    `json:"limit,omitempty" doc:"rate-limited: the budget's size (for login, the failures allowed before the back-off). conflict with quota: the quota's size."`
	WindowS     int    `json:"window_s,omitempty" doc:"rate-limited: the budget's window in seconds."`
	RetryAfterS int    `json:"retry_after_s,omitempty" doc:"rate-limited: seconds until a request would be admitted; also the Retry-After header."`

	Quota string `json:"quota,omitempty" doc:"conflict: the per-user quota the request would pass, one of those the server's operations have (each operation's description says what its quotas count)."`
	Used  *int   `json:"used,omitempty" doc:"conflict with quota: how much of the quota the caller holds now."`
}

// FieldError locates one problem in a request.
type FieldError struct {
	Location string `json:"location" maxLength:"256" example:"body.items[3].text" doc:"Where the problem is: body, a member of it, or a parameter (query.limit, path.id, header.X-API-Key). It names only what the schema declares: an unexpected member is reported at the object that holds it."`
	Message  string `json:"message" maxLength:"1024" example:"expected length <= 65536" doc:"What is wrong there."`
}

// Error implements error.
func (e *Error) Error() string { return e.Message }

// TransformSchema makes the envelope's code an enum of [Codes].
func (*Error) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	if c := s.Properties["code"]; c != nil {
		c.Enum = nil
		for _, code := range Codes() {
			c.Enum = append(c.Enum, code)
		}
	}
	return s
}

// GetStatus implements huma.StatusError.
func (e *Error) GetStatus() int { return e.status }

// GetHeaders implements huma.HeadersError: the headers sent with e.
func (e *Error) GetHeaders() http.Header {
	if e.header == nil {
		e.header = http.Header{}
	}
	return e.header
}

// RetryUnavailable is the Retry-After of every 503.
const RetryUnavailable = 5 * time.Second

// NewError returns an envelope for status with message msg (empty: the
// status's default). A 503 carries Retry-After.
func NewError(status int, msg string, details ...FieldError) *Error {
	e := &Error{status: status, Code: CodeForStatus(status), Message: cmp.Or(msg, defaultMessage(status)), Details: ErrorDetails{Errors: details}}
	if status == http.StatusServiceUnavailable {
		e.GetHeaders().Set("Retry-After", strconv.Itoa(int(RetryUnavailable/time.Second)))
	}
	return e
}

// unavailable is a 503 whose cause err is logged, never sent.
func unavailable(msg string, err error) *Error {
	e := NewError(http.StatusServiceUnavailable, msg)
	e.cause = err
	return e
}

// codes maps the statuses the API uses to their envelope codes.
var codes = map[int]string{
	http.StatusBadRequest:            "invalid-request",
	http.StatusUnauthorized:          "unauthenticated",
	http.StatusForbidden:             "forbidden",
	http.StatusNotFound:              "not-found",
	http.StatusMethodNotAllowed:      "method-not-allowed",
	http.StatusNotAcceptable:         "not-acceptable",
	http.StatusRequestTimeout:        "request-timeout",
	http.StatusConflict:              "conflict",
	http.StatusRequestEntityTooLarge: "payload-too-large",
	http.StatusUnsupportedMediaType:  "unsupported-media-type",
	http.StatusUnprocessableEntity:   "unprocessable",
	http.StatusTooManyRequests:       "rate-limited",
	http.StatusInternalServerError:   "internal",
	http.StatusServiceUnavailable:    "unavailable",
	StatusClientClosedRequest:        "client-closed-request", // only the access log sees it
}

// Codes returns the platform's codes that a client sees, sorted.
func Codes() []string {
	return slices.DeleteFunc(slices.Sorted(maps.Values(codes)), func(c string) bool {
		return c == codes[StatusClientClosedRequest]
	})
}

// DeclareErrorCode adds code, one a feature's handler sets in place of its
// status's, to the spec's enum of Error.code. It is kebab-case, at most 64 bytes.
func DeclareErrorCode(s *Server, code string) {
	s.addToEnum(s.errorSchema().Properties["code"], code, kebab, "error code", "kebab-case", "bookmark-exists")
}

// DeclareQuota adds name, a per-user quota a feature's 409 names with
// details.limit and details.used, to the spec's enum of details.quota. It is
// snake_case, at most 64 bytes.
func DeclareQuota(s *Server, name string) {
	details := s.API.OpenAPI().Components.Schemas.SchemaFromRef(s.errorSchema().Properties["details"].Ref)
	s.addToEnum(details.Properties["quota"], name, snake, "quota", "snake_case", "bookmarks")
}

func (s *Server) errorSchema() *huma.Schema {
	return s.API.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[Error](), false, "Error")
}

// addToEnum adds v to p's enum, once, sorted, if it matches re and has at
// most 64 bytes; else s.Err reports it.
func (s *Server) addToEnum(p *huma.Schema, v string, re *regexp.Regexp, what, form, example string) {
	if len(v) > 64 || !re.MatchString(v) {
		s.errs = append(s.errs, fmt.Errorf("%s %q is not %s of at most 64 bytes (such as %s)", what, v, form, example))
	} else if !slices.Contains(p.Enum, any(v)) {
		p.Enum = append(p.Enum, v)
		slices.SortFunc(p.Enum, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	}
}

var (
	kebab = regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	snake = regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
)

// CodeForStatus returns the envelope code for an HTTP status: its text in kebab case
// unless the API names it.
func CodeForStatus(status int) string {
	if c, ok := codes[status]; ok {
		return c
	}
	text := http.StatusText(status)
	if text == "" {
		if status >= 500 {
			return "internal"
		}
		return "error-" + strconv.Itoa(status)
	}
	return strings.ToLower(strings.NewReplacer(" ", "-", "'", "").Replace(text))
}

func defaultMessage(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "the request could not be read"
	case http.StatusNotFound:
		return "nothing here"
	case http.StatusInternalServerError:
		return product.Name + " hit an unexpected error; the X-Request-Id header identifies it in the server log"
	case http.StatusServiceUnavailable:
		return product.Name + " is not ready to serve this request"
	case StatusClientClosedRequest:
		return "the client left before the answer"
	}
	return strings.ToLower(http.StatusText(status))
}

// Messages that replace huma's, which would quote the request.
const (
	msgMalformedBody   = "the request body is not valid JSON"
	msgUnsupportedBody = "the request body must be application/json"
)

// fromHuma builds the envelope for an error huma raises (ctx may be nil),
// keeping only what the schema defines, never the client's input.
func fromHuma(ctx huma.Context, status int, msg string, errs ...error) *Error {
	if status == 0 { // huma asks with status 0 to learn the error type
		return &Error{}
	}
	if status >= 500 {
		return internalFromHuma(ctx, status, msg, errs)
	}
	if status == http.StatusUnsupportedMediaType {
		return NewError(status, msgUnsupportedBody)
	}
	var op *huma.Operation
	if ctx != nil {
		op = ctx.Operation()
	}
	details := validationDetails(op, status, errs)
	switch {
	case status == http.StatusBadRequest && slices.ContainsFunc(details, func(fe FieldError) bool { return fe.Message == msgMalformedBody }):
		msg = msgMalformedBody
	case msg == "validation failed":
		msg = "the request is not valid: see details.errors"
	}
	return NewError(status, clip(msg, 1024), details...)
}

// internalFromHuma builds the envelope for a 5xx huma raises: the client's
// mistake when its body failed to read, 499 when it left, else a logged cause.
func internalFromHuma(ctx huma.Context, status int, msg string, errs []error) *Error {
	for _, err := range errs {
		if e := bodyReadError(err); e != nil {
			return e
		}
	}
	if ctx != nil && clientGone(ctx.Context()) {
		return NewError(StatusClientClosedRequest, "")
	}
	e := NewError(status, "")
	e.cause = errors.Join(append([]error{errors.New(msg)}, errs...)...)
	return e
}

// validationDetails returns the distinct details of errs, cut to what op's
// schema defines: at most maxDetails, from the first maxExamined errors.
func validationDetails(op *huma.Operation, status int, errs []error) []FieldError {
	var details []FieldError
	seen := map[FieldError]bool{}
	templates := validationMessages()
	for i, err := range errs {
		if len(details) == maxDetails || i == maxExamined {
			break
		}
		var d huma.ErrorDetailer
		if !errors.As(err, &d) {
			continue // a handler's wrapped error may be internal
		}
		ed := d.ErrorDetail()
		fe := FieldError{Location: clip(schemaLocation(op, ed.Location), 256), Message: clip(schemaMessage(templates, ed.Message), 1024)}
		if status == http.StatusBadRequest && ed.Location == "body" {
			fe.Message = msgMalformedBody
		}
		if !seen[fe] { // many unexpected properties make one detail
			seen[fe] = true
			details = append(details, fe)
		}
	}
	return details
}

const (
	maxDetails  = 100
	maxExamined = 10 * maxDetails
)

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// logCauses returns a huma transformer that logs an [Error]'s cause.
func logCauses(outages *outageLog) huma.Transformer {
	return func(ctx huma.Context, status string, v any) (any, error) {
		if e, ok := v.(*Error); ok {
			logCause(ctx.Context(), outages, e)
		}
		return v, nil
	}
}

// logCause logs e's cause, if any: a 503's through outages.
func logCause(ctx context.Context, outages *outageLog, e *Error) {
	if e.cause != nil && e.status == http.StatusServiceUnavailable {
		outages.log(ctx, e.cause)
	} else if e.cause != nil {
		Logger(ctx).Error("request failed", "status", e.status, "error", e.cause.Error())
	}
}

// useEnvelope makes huma's errors (its globals NewError and
// NewErrorWithContext) [Error]s.
var useEnvelope = sync.OnceFunc(func() {
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		return fromHuma(nil, status, msg, errs...)
	}
	huma.NewErrorWithContext = func(ctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
		return fromHuma(ctx, status, msg, errs...)
	}
})

// WriteError writes e as a JSON response, for code outside huma operations.
func WriteError(w http.ResponseWriter, e *Error) {
	h := w.Header()
	setErrorHeaders(h, e)
	h.Del("Content-Length")
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(e)
}

func setErrorHeaders(h http.Header, e *Error) {
	maps.Copy(h, e.header)
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
}

// ErrorResponse is e as a whole HTTP/1.1 response that closes its
// connection, for one net/http never serves (connlimit's refusal).
func ErrorResponse(e *Error) []byte {
	body, _ := json.Marshal(e)
	body = append(body, '\n')
	res := &http.Response{StatusCode: e.status, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		ContentLength: int64(len(body)), Body: io.NopCloser(bytes.NewReader(body)), Close: true}
	setErrorHeaders(res.Header, e)
	var b bytes.Buffer
	_ = res.Write(&b)
	return b.Bytes()
}

// StatusClientClosedRequest is the status (nginx's) the access log records
// for a request whose client left before the answer.
const StatusClientClosedRequest = 499

// clientGone reports whether the client has left (not a server's deadline).
func clientGone(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}

// bodyReadError returns the 4xx for err when it came from reading the
// request body, or nil.
func bodyReadError(err error) *Error {
	var e *Error // a refusal of the body's bytes (the bytes in flight)
	if errors.As(err, &e) {
		return e
	}
	var re *middleware.ReadError
	if !errors.As(err, &re) {
		return nil
	}
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooBig):
		return NewError(http.StatusRequestEntityTooLarge, "")
	case errors.As(err, &ne) && ne.Timeout():
		return NewError(http.StatusRequestTimeout, "the request body did not arrive in time")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return NewError(http.StatusBadRequest, "the request body ended before the length it declared")
	}
	return NewError(http.StatusBadRequest, "the request body could not be read: its framing is broken")
}

// outageLog logs why the server answered 503: at WARN, each cause once per
// interval, with the requests it failed since. A cause is its text with the
// numbers masked, as addresses change.
type outageLog struct{ counts *logsample.Counts }

// maxOutageCauses bounds the causes remembered.
const maxOutageCauses = 100

var digits = regexp.MustCompile(`[0-9]+`)

func (l *outageLog) log(ctx context.Context, cause error) {
	if _, repeats, due := l.counts.Take(digits.ReplaceAllLiteralString(cause.Error(), "#")); due {
		Logger(ctx).Warn("unavailable: answering 503", "error", cause.Error(), "repeats", repeats)
	}
}

// msgStoreUnavailable is the message of a 503 for a store that failed.
const msgStoreUnavailable = product.Name + "'s database does not answer right now; retry shortly"

// faultAnswers maps each error kind (package fault) to its status and
// default message; Unavailable first, never the client's fault.
var faultAnswers = []struct {
	kind    error
	status  int
	message string
}{
	{fault.ErrUnavailable, http.StatusServiceUnavailable, msgStoreUnavailable},
	{fault.ErrNotFound, http.StatusNotFound, "you have nothing with that id"},
	{fault.ErrConflict, http.StatusConflict, "that exists already"},
	{fault.ErrTooMany, http.StatusConflict, "you hold as many as allowed: delete some first"},
}

// Messages maps an error kind (fault.ErrNotFound, ...) to its message at
// one operation.
type Messages map[error]string

// ErrorFor is the envelope of err by its kind, with msgs' message for it;
// an *Error, nil, and an error of no kind are returned as they are.
func ErrorFor(err error, msgs Messages) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	i := faultAnswer(err)
	if i < 0 {
		return err
	}
	a := faultAnswers[i]
	msg, ok := msgs[a.kind]
	if !ok {
		msg = a.message
	}
	if a.status == http.StatusServiceUnavailable {
		return unavailable(msg, err)
	}
	return NewError(a.status, msg)
}

// faultAnswer is the index in faultAnswers of err's kind, or -1.
func faultAnswer(err error) int {
	for i, a := range faultAnswers {
		if errors.Is(err, a.kind) {
			return i
		}
	}
	return -1
}

// StoreError is the answer to a database error a handler did not handle
// itself: 503 with Retry-After, its cause logged, never sent. nil stays nil.
func StoreError(err error) error {
	if err == nil {
		return nil
	}
	return unavailable(msgStoreUnavailable, err)
}
