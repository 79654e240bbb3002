package api

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/product"
	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
)

// LargeBody is the body limit above which an operation's bodies count in
// the bytes in flight ([BodyBudget]).
const LargeBody = 64 << 10

// limitBody returns the largest body op accepts (0: none), and gives huma
// one byte more, as huma refuses a body of exactly its limit.
func limitBody(op *huma.Operation) int64 {
	if op.RequestBody == nil {
		return 0
	}
	limit := op.MaxBodyBytes
	if limit <= 0 { // huma's default, which it sets only for Body inputs
		limit = 1 << 20
	}
	op.MaxBodyBytes = limit + 1
	return limit
}

// check gives op the middleware that refuses a body, unread, by its
// Content-Length (413) or charset (415).
func (b *bodiesInFlight) check(op *huma.Operation, limit int64) {
	if limit == 0 {
		return
	}
	op.Middlewares = append(op.Middlewares, func(ctx huma.Context, next func(huma.Context)) {
		r, _ := humachi.Unwrap(ctx)
		if r.ContentLength > limit {
			writeHumaError(b.api, ctx, unread(NewError(http.StatusRequestEntityTooLarge,
				fmt.Sprintf("the body is %d bytes; this operation accepts at most %d", r.ContentLength, limit))))
			return
		}
		lowerMediaType(r.Header)
		if !utf8Charset(r.Header.Get("Content-Type")) {
			writeHumaError(b.api, ctx, unread(NewError(http.StatusUnsupportedMediaType, "the request body must be UTF-8: send charset=utf-8, or no charset")))
			return
		}
		next(ctx)
	})
}

// unread closes the connection of e's request, so net/http neither reads
// its body first nor asks an Expect: 100-continue client for it.
func unread(e *Error) *Error {
	e.GetHeaders().Set("Connection", "close")
	return e
}

// lowerMediaType lower-cases h's media type, as huma refuses APPLICATION/JSON.
func lowerMediaType(h http.Header) {
	ct := h.Get("Content-Type")
	mt, params, ok := strings.Cut(ct, ";")
	if lower := strings.ToLower(strings.TrimSpace(mt)); lower != mt {
		if ok {
			lower += ";" + params
		}
		h.Set("Content-Type", lower)
	}
}

// utf8Charset reports whether a Content-Type names no charset, or UTF-8.
func utf8Charset(contentType string) bool {
	if strings.IndexByte(contentType, ';') < 0 {
		return true
	}
	_, params, err := mime.ParseMediaType(contentType)
	cs, named := params["charset"]
	return err != nil || !named || strings.EqualFold(cs, "utf-8")
}

// BodyBudget bounds the bytes of large request bodies (over [LargeBody]) in
// flight. The zero value takes the defaults.
type BodyBudget struct {
	InFlight  int64 // the bytes of all callers' bodies arrived and held
	PerCaller int64 // the declared lengths of one user's or address's bodies
}

// The defaults of a BodyBudget.
const (
	DefaultBodyBytesInFlight  = 64 << 20
	DefaultBodyBytesPerCaller = 16 << 20
)

func (b BodyBudget) withDefaults() BodyBudget {
	if b.InFlight <= 0 {
		b.InFlight = DefaultBodyBytesInFlight
	}
	if b.PerCaller <= 0 {
		b.PerCaller = DefaultBodyBytesPerCaller
	}
	return b
}

// retryBody is the Retry-After of a body the bytes in flight have no room for.
const retryBody = time.Second

// bodiesInFlight counts the lengths each caller's bodies claim, and the
// bytes that have arrived.
type bodiesInFlight struct {
	api    huma.API // set before the first operation is registered
	limits BodyBudget
	errs   []error

	mu      sync.Mutex
	arrived int64
	claimed map[string]int64 // only callers with bodies in flight
}

func newBodiesInFlight(b BodyBudget) *bodiesInFlight {
	return &bodiesInFlight{limits: b.withDefaults(), claimed: map[string]int64{}}
}

// admit claims length bytes for a body of caller, or returns the refusal.
func (b *bodiesInFlight) admit(caller string, length int64) *Error {
	b.mu.Lock()
	defer b.mu.Unlock()
	mine := b.claimed[caller]
	switch {
	case mine+length > b.limits.PerCaller:
		return busyBodies(fmt.Sprintf("you have %d bytes of request bodies in flight, and this one would take you past %d; retry in a second, or send fewer large bodies at once",
			mine, b.limits.PerCaller))
	case b.arrived+length > b.limits.InFlight:
		return bodiesFull()
	}
	b.claimed[caller] = mine + length
	return nil
}

// take counts n bytes arrived, or returns the refusal.
func (b *bodiesInFlight) take(n int64) *Error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.arrived+n > b.limits.InFlight {
		return bodiesFull()
	}
	b.arrived += n
	return nil
}

func (b *bodiesInFlight) release(caller string, length, arrived int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.arrived -= arrived
	if left := b.claimed[caller] - length; left > 0 {
		b.claimed[caller] = left
	} else {
		delete(b.claimed, caller)
	}
}

// BodyBytesInFlight is the bytes of request bodies s holds now, for tests.
func (s *Server) BodyBytesInFlight() int64 {
	s.bodies.mu.Lock()
	defer s.bodies.mu.Unlock()
	return s.bodies.arrived
}

func bodiesFull() *Error {
	return busyBodies(product.Name + " is receiving as many large request bodies as it holds at once; retry in a second")
}

func busyBodies(msg string) *Error {
	e := unread(NewError(http.StatusServiceUnavailable, msg))
	e.GetHeaders().Set("Retry-After", strconv.Itoa(int(retryBody/time.Second)))
	return e
}

// declare makes op count its bodies in the bytes in flight when limit is
// over LargeBody, and documents it.
func (b *bodiesInFlight) declare(op *huma.Operation, limit int64) {
	if limit <= LargeBody {
		return
	}
	if limit > b.limits.PerCaller || limit > b.limits.InFlight {
		b.errs = append(b.errs, fmt.Errorf("operation %s accepts bodies of up to %d bytes, more than the bytes in flight allow (%d a caller, %d in all): raise those bounds",
			op.OperationID, limit, b.limits.PerCaller, b.limits.InFlight))
	}
	op.Middlewares = append(op.Middlewares, b.enforce(limit))
	op.Responses["503"] = &huma.Response{Ref: refUnavailable}
	if op.Description != "" {
		op.Description += "\n\n"
	}
	op.Description += fmt.Sprintf("The body is at most %s, that many bytes included (413 past it). Large bodies in flight are bounded: their lengths to %s for one caller, and the bytes that have arrived to %s for all; "+
		"a body past either is refused with 503 and Retry-After: %d, before it is read unless the server fills as it arrives. Send it again then.",
		bytesText(limit), bytesText(b.limits.PerCaller), bytesText(b.limits.InFlight), int(retryBody/time.Second))
}

func bytesText(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// enforce returns the middleware that counts a request's body in the bytes
// in flight: its length, claimed before it is read, and its bytes as they arrive.
func (b *bodiesInFlight) enforce(limit int64) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		r, w := humachi.Unwrap(ctx)
		length := r.ContentLength
		if length > limit { // refused unread after the rate limits (check): it needs no room
			next(ctx)
			return
		}
		if length < 0 {
			length = limit // unknown until read: as much as it may be
		}
		caller := "ip:" + middleware.ClientKey(r.Context())
		if id := auth.FromContext(ctx.Context()); id != nil {
			caller = "user:" + id.User.ID
		}
		if e := b.admit(caller, length); e != nil {
			writeHumaError(b.api, ctx, e)
			return
		}
		counted := &countedBody{ReadCloser: r.Body, b: b, header: w.Header()}
		r.Body = counted
		defer func() { b.release(caller, length, counted.n) }()
		next(ctx)
	}
}

// A countedBody counts its bytes in the bytes in flight as they are read.
type countedBody struct {
	io.ReadCloser
	b      *bodiesInFlight
	header http.Header // the response's: a refusal's headers go there
	n      int64       // the bytes read and counted
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n > 0 {
		if e := c.b.take(int64(n)); e != nil {
			setErrorHeaders(c.header, e) // huma answers the read's error, but writes no error's headers
			return 0, e
		}
		c.n += int64(n)
	}
	return n, err
}
