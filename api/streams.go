package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/streams"
	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
)

// This file is the stream plane: Server-Sent Events endpoints, each a raw
// handler on the router (a stream outlives anything a huma handler may
// return), declared like any operation and documented in the spec from
// that declaration. Every stream passes one front door, open, before a
// byte of its response: the caller is resolved as for any operation (401,
// 403 and 503 alike), then one of the caller's stream slots is reserved,
// one of its user's, and a token of the caller's open budget, or the
// request is refused with the one 429 (scope stream), before any stream
// header.

// StreamConfig configures the stream endpoints. Zero fields take their
// defaults.
type StreamConfig struct {
	// Cap bounds each caller's open streams (a session's, an API key's),
	// across every stream endpoint: default
	// streams.NewMemoryCap(DefaultStreamCap).
	Cap streams.Cap
	// UserCap bounds each user's open streams, across all of the user's
	// sessions and API keys and every stream endpoint: default
	// streams.NewMemoryCap(DefaultStreamUserCap). Its Max must be at least
	// Cap's (Server.Err says so).
	UserCap streams.Cap
	// Hub carries the callers' events: default an in-memory hub.
	Hub streams.Hub
	// Heartbeat is how often an idle stream gets a comment line, which
	// keeps proxies from closing it, finds dead clients, and renews the
	// stream's slot: default 15 s.
	Heartbeat time.Duration
	// RetryAfter is the Retry-After of a 429 of the stream plane's caps:
	// their slots free when some stream ends, which no clock predicts.
	// Default 5 s. (The open budget's is the time until it admits an
	// open, as for any budget; it is Limits.StreamOpens.)
	RetryAfter time.Duration
}

// The stream plane's defaults.
const (
	DefaultStreamCap        = 16
	DefaultStreamUserCap    = 64
	DefaultStreamHeartbeat  = 15 * time.Second
	DefaultStreamRetryAfter = 5 * time.Second
	// streamReplay and streamBuffer size the default in-memory hub: the
	// events kept for reconnects, and those a slow stream may fall
	// behind by before it is closed.
	streamReplay = 1024
	streamBuffer = 64
	// streamRetry is the reconnection delay a stream asks clients for.
	streamRetry = 3 * time.Second
)

func (c StreamConfig) withDefaults() StreamConfig {
	if c.Cap == nil {
		c.Cap = streams.NewMemoryCap(DefaultStreamCap)
	}
	if c.UserCap == nil {
		c.UserCap = streams.NewMemoryCap(DefaultStreamUserCap)
	}
	if c.Hub == nil {
		c.Hub = streams.NewMemoryHub(streamReplay, streamBuffer)
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultStreamHeartbeat
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultStreamRetryAfter
	}
	return c
}

// The names of the stream plane's caps and budget, as the spec, the
// headers and the 429 give them (their policy): the cap of each caller (a
// session or an API key), the cap of each user (all of its sessions and
// keys), and the open budget of each caller.
const (
	streamCapName     = "streams"
	streamUserCapName = "streams-per-user"
)

// An EventType is one kind of event a stream may send: its name (the SSE
// event field), a value of its data's type (for the spec's schema, and to
// check what is published), and what it means, for the spec.
type EventType struct {
	Name string
	Data any
	Doc  string
}

// A StreamOperation is a stream endpoint: its operation (id, path,
// summary, description, tags, parameters, other responses) as the spec
// shows it, who may open it, every event type it may send, and Serve,
// which writes events until the stream ends. Declare it with
// [Server.AddStream].
type StreamOperation struct {
	Operation huma.Operation
	Access    Access // Caller when empty
	Events    []EventType
	Serve     func(st *Stream)
}

// streamPlane is one server's stream endpoints: the caps, the open
// budget, the hub, the streams open on this replica, and the signal that
// closes them.
type streamPlane struct {
	cfg     StreamConfig
	svc     *auth.Service
	now     func() time.Time
	closing chan struct{} // closed by Server.CloseStreams
	once    sync.Once
	// opens is the open budget's plane, nil when the limits are
	// disabled; headers writes what the caps and the budget decided;
	// keyCount and userCount count the caps' decisions for the metrics.
	opens               *plane
	headers             *ratelimit.CapHeaders
	keyCount, userCount Decisions
	// n counts the streams admitted and not yet finished on this
	// replica; ended, when not nil, is closed when it falls to 0.
	mu    sync.Mutex
	n     int
	ended chan struct{}
}

// newStreamPlane is the stream plane of cfg, with its defaults, on the
// planes ps (the open budget's, unless the limits are disabled) and the
// metrics m.
func newStreamPlane(cfg StreamConfig, ps *planes, m *Metrics, svc *auth.Service, now func() time.Time) *streamPlane {
	p := &streamPlane{cfg: cfg, svc: svc, now: now, closing: make(chan struct{}),
		keyCount: m.countersFor("stream", streamCapName), userCount: m.countersFor("stream", streamUserCapName)}
	var opens *ratelimit.Budget
	if !ps.limits.Disabled {
		p.opens = ps.streamOpens
		b := p.opens.limiter.Budget()
		opens = &b
	}
	p.headers = ratelimit.NewCapHeaders(opens, cfg.RetryAfter,
		ratelimit.Concurrency{Name: streamCapName, Capacity: cfg.Cap.Max()},
		ratelimit.Concurrency{Name: streamUserCapName, Capacity: cfg.UserCap.Max()})
	return p
}

// enter and leave count a stream in and out.
func (p *streamPlane) enter() { p.mu.Lock(); p.n++; p.mu.Unlock() }

func (p *streamPlane) leave() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n--; p.n == 0 && p.ended != nil {
		close(p.ended)
		p.ended = nil
	}
}

// live is how many streams are open on this replica.
func (p *streamPlane) live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// none returns a channel closed once no stream is open.
func (p *streamPlane) none() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	if p.ended == nil {
		p.ended = make(chan struct{})
	}
	return p.ended
}

// addStream declares op's operation in the spec (its access is Caller,
// or so.access; the hooks add its security, errors and x-rate-limit as for
// any operation) and mounts its handler on the router.
func (s *Server) addStream(so StreamOperation) {
	op := so.Operation
	op.Method = http.MethodGet
	op.Metadata = nil // a stream's declaration is its StreamOperation's
	declare(&op, func(d *Declaration) {
		d.Access, d.Draws = cmp.Or(so.Access, Caller), StreamOpensBudget
		d.Caps = []ConcurrencyCap{{Plane: "stream", Policy: streamCapName, Concurrent: s.streams.cfg.Cap.Max()},
			{Plane: "stream", Policy: streamUserCapName, Concurrent: s.streams.cfg.UserCap.Max()}}
	})
	op.Parameters = append(op.Parameters, &huma.Param{
		Name: "Last-Event-ID", In: "header", Description: "The id of the last event received: the stream resumes after it. Browsers send it on reconnect.",
		Schema: &huma.Schema{Type: huma.TypeString, MaxLength: ptr(41), Pattern: lastEventID.String()},
	})
	responses := op.Responses
	head := op // HEAD, as HTTP has it wherever GET is: declared, since it passes the stream's door
	op.Responses = map[string]*huma.Response{"200": {
		Description: "The stream: text/event-stream, one event per message, until the client leaves or the server closes it (after a stream.closing event). A comment line (`:`) comes every heartbeat. " +
			"The schema is text, which is what a validator reads; x-events names the schema of each message, and the generated client types it (docs/streams.md).",
		Content: map[string]*huma.MediaType{"text/event-stream": {
			Schema:     &huma.Schema{Type: huma.TypeString, Description: "Server-Sent Events, as UTF-8 text; each message is one of x-events."},
			Extensions: map[string]any{"x-events": map[string]any{"$ref": s.eventSchema(op.OperationID, append(slices.Clone(so.Events), closingEvent))}},
		}},
	}}
	head.Method, head.OperationID, head.Summary = http.MethodHead, "head-"+op.OperationID, "Check: "+op.Summary
	head.Description = "The answer GET would start with, headers only, and no stream: the same checks, refusals and statuses, and it draws an open from the stream-opens budget as a GET does. " +
		"A client may ask it to learn whether a stream would start, without holding one."
	head.Responses = map[string]*huma.Response{"200": {Description: "A GET would start the stream now."}}
	for status, r := range responses { // the stream's other answers, such as a 204
		op.Responses[status] = r
		head.Responses[status] = r
	}
	s.API.OpenAPI().AddOperation(&op)
	s.API.OpenAPI().AddOperation(&head)
	names := map[string]bool{closingEvent.Name: true}
	for _, e := range so.Events {
		names[e.Name] = true
	}
	s.router.Get(op.Path, func(w http.ResponseWriter, r *http.Request) {
		st, ok := s.streams.open(s, &op, w, r)
		if !ok {
			return
		}
		st.head = r.Method == http.MethodHead
		st.declared = names
		st.serve(func(st *stream) { so.Serve(&Stream{st: st, srv: s}) })
	})
}

// eventSchema declares, in the spec's components, the schema of the
// messages of the stream operationID: one of its event types, each an
// object with the event's name, its data, its id and the retry field, as
// huma's sse package and generated clients type SSE. It returns the
// schema's reference. The text/event-stream response itself is a string
// (what a validating proxy reads); its x-events points here.
func (s *Server) eventSchema(operationID string, events []EventType) string {
	reg := s.API.OpenAPI().Components.Schemas
	var one []*huma.Schema
	for _, e := range events {
		one = append(one, &huma.Schema{
			Title: "Event " + e.Name, Type: huma.TypeObject, Description: e.Doc,
			Properties: map[string]*huma.Schema{
				"event": {Type: huma.TypeString, Enum: []any{e.Name}, Description: "The event's name."},
				"data":  reg.Schema(reflect.TypeOf(e.Data), true, e.Name),
				"id":    {Type: huma.TypeString, Description: "The event's id, for Last-Event-ID. stream.closing has none; stream.gap has one when it marks a place in the events (an outage's)."},
				"retry": {Type: huma.TypeInteger, Minimum: ptr(0.0), Maximum: ptr(float64(time.Hour / time.Millisecond)), Description: "The reconnection delay, in milliseconds, a client should wait (SSE's retry field). " + product.Name + " sends it once, first, alone (retry: " + strconv.FormatInt(streamRetry.Milliseconds(), 10) + "): a message without data, which EventSource takes as the delay and dispatches no event for."},
			},
			Required: []string{"event", "data"},
		})
	}
	slices.SortFunc(one, func(a, b *huma.Schema) int { return strings.Compare(a.Title, b.Title) })
	name := streamSchemaName(operationID)
	reg.Map()[name] = &huma.Schema{
		Title:       "Server-Sent Events of " + operationID,
		Description: "One message of the stream, as UTF-8 text in the SSE format: one of these events.",
		OneOf:       one,
	}
	return "#/components/schemas/" + name
}

// streamSchemaName is the component name of a stream's messages:
// follow-job-log's is FollowJobLogEvent.
func streamSchemaName(operationID string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(operationID, func(r rune) bool { return r == '-' || r == '/' || r == '{' || r == '}' }) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String() + "Event"
}

// lastEventID is what a Last-Event-ID may be: an id this API gave.
var lastEventID = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)

// ClosingEvent is the data of the stream.closing event, a stream's last.
type ClosingEvent struct {
	Reason string `json:"reason" enum:"shutdown,slow,unauthenticated,unavailable" doc:"shutdown: the server is stopping (reconnect to another replica, or later); slow: the client read too slowly and fell behind; unauthenticated: the stream's credentials no longer hold (logged out, key deleted, session expired); unavailable: a store the stream needs failed (its slot was lost in an outage and others took its place, or its job could not be read again after a gap): reconnect."`
}

// closingEvent ends every stream the server closes.
var closingEvent = EventType{Name: "stream.closing", Data: ClosingEvent{}, Doc: "The stream's last event: the server closes it, for the reason given."}

// open is the front door of every stream: it resolves the caller, then
// takes the stream's places (admit), and reports whether the stream may
// start. When it may not, it has answered: 401, 403, 422, 503, or 429
// with scope stream, before any stream header.
func (p *streamPlane) open(s *Server, op *huma.Operation, w http.ResponseWriter, r *http.Request) (*stream, bool) {
	var id *auth.Identity
	hctx := humachi.NewContext(op, r, w)
	s.requireCaller(hctx, func(ctx huma.Context) { id = auth.FromContext(ctx.Context()) })
	if id == nil {
		return nil, false // answered
	}
	// A malformed Last-Event-ID is refused before the stream takes a slot
	// or an open: a refusal costs the caller nothing.
	after := r.Header.Get("Last-Event-ID")
	if after != "" && !lastEventID.MatchString(after) {
		WriteError(w, NewError(http.StatusUnprocessableEntity, "", FieldError{Location: "header.Last-Event-ID", Message: "not an event id of this API: <digits>-<digits>, as an event's id: field"}))
		return nil, false
	}
	slot, userSlot, e := p.admit(r.Context(), w.Header(), id)
	observeRefusal(r.Context(), e, id)
	switch {
	case e != nil && e.status == StatusClientClosedRequest:
		w.WriteHeader(StatusClientClosedRequest) // nobody is left to answer; only the access log sees it
		return nil, false
	case e != nil:
		if e.status == http.StatusServiceUnavailable {
			s.outages.log(r.Context(), e.cause)
		}
		WriteError(w, e)
		return nil, false
	}
	p.enter()
	// The stream's context is its own: it outlives the handler once the
	// stream has its connection (start). Until then it ends with the
	// request's.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	if rc := chi.RouteContext(ctx); rc != nil { // chi reuses its own once the handler returns
		var own *chi.Context // none for a stream without path parameters
		if len(rc.URLParams.Keys) > 0 {
			own = chi.NewRouteContext()
			own.URLParams.Keys, own.URLParams.Values = slices.Clone(rc.URLParams.Keys), slices.Clone(rc.URLParams.Values)
			own.RoutePatterns = slices.Clone(rc.RoutePatterns)
		}
		ctx = context.WithValue(ctx, chi.RouteCtxKey, own)
	}
	st := &stream{plane: p, slot: slot, userSlot: userSlot, w: w, c: streams.NewConn(w, p.cfg.Heartbeat), r: r.WithContext(ctx), cancel: cancel,
		caller: id, lastEventID: after, lastSent: after, opened: p.now()}
	st.unfollow = context.AfterFunc(r.Context(), cancel)
	return st, true
}

// admit takes a stream's places in order: one of the caller's slots, one
// of its user's, then a token of the caller's open budget. It writes the
// plane's headers for what it decided. When one refuses, the places taken
// before it are given back, so a refused open costs the caller nothing,
// and it returns the refusal: 429 naming the refusing policy (Retry-After
// RetryAfter for a cap, the time until the budget admits an open for the
// budget), or 503 when a store fails.
func (p *streamPlane) admit(ctx context.Context, h http.Header, id *auth.Identity) (slot, userSlot streams.Slot, e *Error) {
	var buf [2]int
	free := buf[:0] // of each cap decided
	capacity, userCapacity := p.cfg.Cap.Max(), p.cfg.UserCap.Max()
	failed := func(c Decisions, msg string, err error) *Error {
		if clientGone(ctx) { // not the store's failure: nobody is left to answer
			return NewError(StatusClientClosedRequest, "")
		}
		inc(c.failed)
		return unavailable(msg, err)
	}
	const cannotCount = product.Name + " cannot count your streams right now; retry shortly"

	slot, live, ok, err := p.cfg.Cap.Reserve(ctx, capKey(id))
	if err != nil {
		return streams.Slot{}, streams.Slot{}, failed(p.keyCount, cannotCount, err)
	}
	free = append(free, freeSlots(capacity, live, ok))
	if !ok {
		inc(p.keyCount.limited)
		p.headers.Write(h, free, nil, p.now())
		return streams.Slot{}, streams.Slot{}, RateLimited("stream", streamCapName, capacity, 0, p.cfg.RetryAfter)
	}
	inc(p.keyCount.allowed)

	userSlot, live, ok, err = p.cfg.UserCap.Reserve(ctx, userKey(id))
	if err != nil {
		slot.Release()
		return streams.Slot{}, streams.Slot{}, failed(p.userCount, cannotCount, err)
	}
	free = append(free, freeSlots(userCapacity, live, ok))
	if !ok {
		slot.Release()
		free[0]++ // what the refusal left: the caller's slot is back
		inc(p.userCount.limited)
		p.headers.Write(h, free, nil, p.now())
		return streams.Slot{}, streams.Slot{}, RateLimited("stream", streamUserCapName, userCapacity, 0, p.cfg.RetryAfter)
	}
	inc(p.userCount.allowed)

	var d *ratelimit.Decision
	if p.opens != nil {
		dec, err := p.opens.limiter.Allow(ctx, capKey(id))
		if err != nil {
			slot.Release()
			userSlot.Release()
			return streams.Slot{}, streams.Slot{}, failed(p.opens.count, product.Name+" cannot check its rate limits right now; retry shortly", err)
		}
		if !dec.Allowed {
			slot.Release()
			userSlot.Release()
			free[0]++ // what the refusal left: both slots are back
			free[1]++
			inc(p.opens.count.limited)
			p.headers.Write(h, free, &dec, p.now())
			return streams.Slot{}, streams.Slot{}, refusal(p.opens, &dec)
		}
		inc(p.opens.count.allowed)
		d = &dec
	}
	p.headers.Write(h, free, d, p.now())
	return slot, userSlot, nil
}

// freeSlots is what a cap of capacity slots has free once it decided:
// none when it refused.
func freeSlots(capacity, live int, admitted bool) int {
	if !admitted {
		return 0
	}
	return min(max(capacity-live, 0), capacity)
}

// capKey is the caller's key in the cap and the open budget: its session,
// or its API key.
func capKey(id *auth.Identity) string {
	if id.Method == auth.MethodSession {
		return "s:" + id.SessionHash
	}
	return "k:" + id.APIKeyID
}

// userKey is the caller's user's key in the per-user cap.
func userKey(id *auth.Identity) string { return "u:" + id.User.ID }

// A stream is one open SSE response: its places, its caller, and its
// transport, a [streams.Conn].
//
// On HTTP/1.x a stream that starts takes its connection over from
// net/http (Hijack) and is served by a goroutine of its own, so the
// handler returns and the connection's net/http goroutines and buffers
// (some 20 KiB, see BENCHMARKS.md) are freed for as long as the stream
// lives; the response's body then ends when the connection closes, and
// stream.closing says why.
type stream struct {
	plane *streamPlane
	// Its places in the caller's cap and in its user's.
	slot, userSlot streams.Slot
	// The response, until start takes the connection, and its transport.
	w http.ResponseWriter
	c *streams.Conn
	// The request, with the stream's context: cancel ends it; unfollow
	// stops it from ending with the request's, once the stream has its
	// connection.
	r           *http.Request
	cancel      context.CancelFunc
	unfollow    func() bool
	caller      *auth.Identity
	lastEventID string
	// lastSent is the id of the last event sent, else lastEventID: where
	// a gap starts (stream.gap's after). gapped says the last event sent
	// was stream.gap.
	lastSent string
	gapped   bool
	declared map[string]bool // the event types the stream's operation declares
	opened   time.Time
	// handedOff is closed once the handler may return: the stream has
	// its connection, or it has ended. panicked is a panic of serve
	// before then, for the handler to raise.
	handedOff chan struct{}
	panicked  any
	started   bool // its 200 is sent
	head      bool // a HEAD: start sends the 200's headers, and ends the stream
}

// serve runs the operation's serve on a goroutine of its own, and
// returns once the stream has taken its connection or has ended. A panic
// before that is raised here, for the recovery middleware to answer.
func (st *stream) serve(serve func(*stream)) {
	st.handedOff = make(chan struct{})
	go func() {
		defer func() {
			v := recover()
			if v != nil && st.started {
				logger(st.r.Context()).Error("stream: panic", "panic", v, "stack", string(debug.Stack()))
			} else if v != nil {
				st.panicked = streamPanic{v, debug.Stack()}
			}
			st.finish()
		}()
		serve(st)
	}()
	<-st.handedOff
	if st.panicked != nil {
		panic(st.panicked)
	}
}

// A streamPanic is a panic of a stream's goroutine, raised again on its
// handler's with the stack where it happened.
type streamPanic struct {
	value any
	stack []byte
}

func (p streamPanic) String() string {
	return fmt.Sprintf("%v\n\nin the stream's goroutine:\n%s", p.value, p.stack)
}

// start sends the stream's headers and its retry hint. Where it can, it
// takes the connection over (see stream) and lets the handler return;
// the stream's transport (streams.Conn.Start) says how.
func (st *stream) start() error {
	st.started = true
	if st.head {
		st.c.Head()
		return errStreamEnded
	}
	return st.c.Start(streamRetry, func() {
		st.unfollow()
		close(st.handedOff) // the handler may return: st.w is not used again
	}, st.cancel)
}

// send writes one event. An event type the operation does not declare is
// never sent: the spec lists every event a stream sends.
func (st *stream) send(id, event string, data json.RawMessage) error {
	if !st.declared[event] {
		logger(st.r.Context()).Error("stream: dropped an event its operation does not declare", "event", event)
		return nil
	}
	msg, err := streams.AppendEvent(nil, id, event, data)
	if err != nil {
		logger(st.r.Context()).Error("stream: dropped an event whose data is not JSON", "event", event)
		return nil
	}
	if id != "" {
		st.lastSent = id
	}
	st.gapped = event == gapEvent.Name
	return st.c.Write(msg)
}

// sendValue writes an event without an id whose data is v as JSON.
func (st *stream) sendValue(event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return st.send("", event, b)
}

// beat is a stream's heartbeat: it ends a stream whose client has stopped
// taking data or whose credentials no longer hold, writes the comment,
// and renews the stream's slot.
func (st *stream) beat() error {
	if st.c.Stalled() {
		st.c.Abort() // nothing more will be taken: do not wait to finish the response
		return errStreamEnded
	}
	if !st.callerHolds() {
		st.close("unauthenticated")
		return errStreamEnded
	}
	if err := st.c.Beat(); err != nil {
		return err
	}
	return st.renew()
}

// callerHolds reports whether the stream's credentials still name a
// caller: a revoked API key, or a session that ended or was logged out,
// ends its streams within a heartbeat. Lookups go through the auth
// service's caches, as for any request; a store that fails keeps the
// stream going.
func (st *stream) callerHolds() bool {
	if st.plane.svc == nil {
		return true
	}
	id, err := resolveCaller(st.r.Context(), st.plane.svc, st.r)
	if err != nil && !errors.Is(err, auth.ErrUnauthenticated) {
		return true
	}
	return id != nil && capKey(id) == capKey(st.caller)
}

// renew extends the stream's slots, the caller's and its user's. A slot
// whose lease was lost while its store failed, and whose place another
// stream took meanwhile, ends the stream: its client reconnects. Any
// other failure is logged; a lease outlives several heartbeats.
func (st *stream) renew() error {
	for _, slot := range []streams.Slot{st.slot, st.userSlot} {
		err := slot.Refresh(st.r.Context())
		if errors.Is(err, streams.ErrSlotLost) {
			st.close("unavailable")
			return err
		}
		if err != nil {
			logger(st.r.Context()).Warn("stream: its slot was not renewed; retrying at the next heartbeat", "error", err)
		}
	}
	return nil
}

// close sends the stream's last event.
func (st *stream) close(reason string) {
	_ = st.sendValue(closingEvent.Name, ClosingEvent{Reason: reason})
}

// finish ends the stream: it frees its slot, and closes the connection
// it took, logging the stream's end (the access log saw the request end
// when the handler returned). The handler may then return.
func (st *stream) finish() {
	st.cancel()
	st.slot.Release()
	st.userSlot.Release()
	if st.c.Close() {
		logger(st.r.Context()).LogAttrs(context.Background(), slog.LevelInfo, "stream ended",
			slog.String("path", st.r.URL.Path), slog.Int64("bytes", st.c.Written()), slog.Duration("duration", st.plane.now().Sub(st.opened)))
	} else if st.handedOff != nil {
		close(st.handedOff)
	}
	st.plane.leave()
}

// pump is the loop of a stream (streams.Pump): each value from source
// goes to send (ok false once source is closed), and a heartbeat goes out
// when due, until the client leaves, the server shuts down
// (stream.closing), or a write fails. A send that ends the stream returns
// an error.
func pump[T any](st *stream, source <-chan T, send func(v T, ok bool) error) {
	streams.Pump(st.r.Context(), st.plane.cfg.Heartbeat, st.plane.closing, source, send, st.beat, func() { st.close("shutdown") })
}

// errStreamEnded is what a send returns to end its stream.
var errStreamEnded = errors.New("api: the stream ended")

// CloseStreams makes every open stream send stream.closing and end, and
// waits until they have, or until ctx is done. Call it when a shutdown
// starts, beside http.Server.Shutdown: a stream never ends by itself,
// and one that took its connection is not the server's to wait for.
func (s *Server) CloseStreams(ctx context.Context) error {
	s.streams.once.Do(func() { close(s.streams.closing) })
	select {
	case <-s.streams.none():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
