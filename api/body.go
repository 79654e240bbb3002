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

// What every request body must be, the same for every operation that
// reads one, from what the operation declares where it is registered:
//
//   - At most MaxBodyBytes long, that many bytes included (huma's default,
//     1 MiB, when it declares none). A request that declares a longer
//     Content-Length is refused 413 before a byte is read; one that
//     declares none (chunked) is refused 413 at the byte past the limit.
//     Either is refused once the caller is known and the request charged
//     to its budget, as huma's validation is, so that its answer carries
//     the rate-limit headers the spec declares on every 413.
//   - UTF-8: a Content-Type that names another charset is refused 415,
//     rather than its text misread.
//   - Room for it: an operation whose limit is over [LargeBody] (ingest's
//     8 MiB, a fork's uploads) counts the body's bytes in the bytes in
//     flight as they arrive, until the handler returns. A body whose bytes
//     would take the whole server or the caller past its bound is refused
//     there, 503 with Retry-After: 1 (see [BodyBudget]): the bytes of
//     bodies held at once, and the memory they take, are bounded whatever
//     the clients send, and bodies that are slow to come hold only the
//     bytes that came, so they cannot keep out another caller's.

// LargeBody is the body limit above which an operation's bodies draw from
// the bytes in flight. Smaller bodies are not worth the count.
const LargeBody = 64 << 10

// limitBody returns the largest body op accepts, as it declared it (0 when
// it reads none), and gives huma's reader a limit one byte larger, since
// huma refuses a body whose length equals its limit: MaxBodyBytes is then
// the largest body accepted, as documented.
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

// bodyLimit is the largest body op accepts; 0 when it reads none.
func bodyLimit(op *huma.Operation) int64 { return declarationOf(op).bodyLimit }

// check gives op, whose body limit is limit (0: it reads none), the
// middleware that refuses a body by what its request declares, after the
// rate limits: 413 for a Content-Length over limit, 415 for a charset
// other than UTF-8. Neither reads a byte of the body. It also writes the
// media type in lower case, as huma reads it.
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

// unread marks e as the answer to a request whose body is left unread:
// it closes the connection. Otherwise net/http would read the body, up to
// 256 KiB of it, before answering (to keep the connection for the next
// request), and a client that sent Expect: 100-continue would be asked
// for the body it is being refused.
func unread(e *Error) *Error {
	e.GetHeaders().Set("Connection", "close")
	return e
}

// lowerMediaType rewrites the media type of h's Content-Type in lower
// case, without the spaces around it: a media type is case-insensitive
// (RFC 9110), but huma finds the format of a body by its exact name, and
// would refuse APPLICATION/JSON with 415.
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
// One that does not parse is left to the operation, which refuses it.
func utf8Charset(contentType string) bool {
	if strings.IndexByte(contentType, ';') < 0 { // no parameters: the usual case
		return true
	}
	_, params, err := mime.ParseMediaType(contentType)
	cs, named := params["charset"]
	return err != nil || !named || strings.EqualFold(cs, "utf-8")
}

// BodyBudget bounds the bytes of request bodies in flight: what the
// operations whose body limit is over [LargeBody] hold at once, read or
// being read, for the whole server and for each caller. The zero value
// takes the defaults.
type BodyBudget struct {
	// InFlight bounds the bytes of every caller's bodies together.
	// Default 64 MiB: eight bodies of ingest's 8 MiB.
	InFlight int64
	// PerCaller bounds the bytes of one caller's bodies: a user's,
	// whatever session or API key it calls with, or a client address's
	// for a public operation. Default 16 MiB: two bodies of 8 MiB.
	PerCaller int64
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

// RetryBody is the Retry-After of a body the bytes in flight have no room
// for: bodies are read and answered in well under a second.
const RetryBody = time.Second

// bodiesInFlight counts the bytes of the bodies in flight.
type bodiesInFlight struct {
	api    huma.API // set before the first operation is registered
	limits BodyBudget
	errs   []error // operations that accept more than a caller may send

	mu       sync.Mutex
	total    int64
	byCaller map[string]int64 // only callers with bytes in flight
}

func newBodiesInFlight(b BodyBudget) *bodiesInFlight {
	return &bodiesInFlight{limits: b.withDefaults(), byCaller: map[string]int64{}}
}

// reserve takes n more bytes for caller, unless that would put the
// server or the caller over its bound: then it takes nothing and returns
// the refusal.
func (b *bodiesInFlight) reserve(caller string, n int64) *Error {
	b.mu.Lock()
	defer b.mu.Unlock()
	mine := b.byCaller[caller]
	switch {
	case mine+n > b.limits.PerCaller:
		return busyBodies(fmt.Sprintf("you have %d bytes of request bodies in flight, and this one would take you past %d; retry in a second, or send fewer large bodies at once",
			mine, b.limits.PerCaller))
	case b.total+n > b.limits.InFlight:
		return busyBodies(product.Name + " is receiving as many large request bodies as it holds at once; retry in a second")
	}
	b.total += n
	b.byCaller[caller] = mine + n
	return nil
}

// release gives back n bytes caller reserved.
func (b *bodiesInFlight) release(caller string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total -= n
	if left := b.byCaller[caller] - n; left > 0 {
		b.byCaller[caller] = left
	} else {
		delete(b.byCaller, caller)
	}
}

// BodyBytesInFlight is the bytes of request bodies s holds reserved now,
// all callers together: what a test of a feature with large bodies waits
// on.
func (s *Server) BodyBytesInFlight() int64 { return s.bodies.inFlight() }

// inFlight is the bytes reserved now, for tests.
func (b *bodiesInFlight) inFlight() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// busyBodies is the 503 of a body there is no room for.
func busyBodies(msg string) *Error {
	e := unread(NewError(http.StatusServiceUnavailable, msg))
	e.GetHeaders().Set("Retry-After", strconv.Itoa(int(RetryBody/time.Second)))
	return e
}

// declare makes op, whose body limit is limit, count its bodies in the
// bytes in flight (the middleware enforce returns) when limit is over
// LargeBody, and says so in its description and its 503 response.
func (b *bodiesInFlight) declare(op *huma.Operation, limit int64) {
	if limit <= LargeBody {
		return
	}
	if limit > b.limits.PerCaller || limit > b.limits.InFlight {
		b.errs = append(b.errs, fmt.Errorf("operation %s accepts bodies of up to %d bytes, more than the bytes in flight allow (%d a caller, %d in all): raise those bounds",
			op.OperationID, limit, b.limits.PerCaller, b.limits.InFlight))
	}
	op.Middlewares = append(op.Middlewares, b.enforce())
	op.Responses["503"] = &huma.Response{Ref: refUnavailable}
	if op.Description != "" {
		op.Description += "\n\n"
	}
	op.Description += fmt.Sprintf("The body is at most %s, that many bytes included (413 past it). Large bodies in flight are bounded, counted as their bytes arrive: %s from one caller, %s from all; "+
		"a body whose bytes would pass either is refused with 503 and Retry-After: %d. Send it again then.",
		bytesText(limit), bytesText(b.limits.PerCaller), bytesText(b.limits.InFlight), int(RetryBody/time.Second))
}

// bytesText writes n bytes for a person: "8 MiB (8388608 bytes)".
func bytesText(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// enforce returns the middleware that counts the body of each request
// to an operation in the bytes in flight as they arrive, until the rest
// of the request has run: a read whose bytes would pass a bound fails
// with the refusal, which the operation answers.
func (b *bodiesInFlight) enforce() func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		r, w := humachi.Unwrap(ctx)
		caller := "ip:" + middleware.GetClientIP(r.Context())
		if id := auth.FromContext(ctx.Context()); id != nil {
			caller = "user:" + id.User.ID
		}
		counted := &countedBody{ReadCloser: r.Body, b: b, header: w.Header(), caller: caller}
		r.Body = counted
		defer func() { b.release(caller, counted.n) }()
		next(ctx)
	}
}

// A countedBody is a request body whose bytes take room in the bytes in
// flight as they are read.
type countedBody struct {
	io.ReadCloser
	b      *bodiesInFlight
	header http.Header // the response's: a refusal's headers go there
	caller string
	n      int64 // the bytes read and counted
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n > 0 {
		if e := c.b.reserve(c.caller, int64(n)); e != nil {
			setErrorHeaders(c.header, e) // huma answers the read's error, but writes no error's headers
			return 0, e
		}
		c.n += int64(n)
	}
	return n, err
}
