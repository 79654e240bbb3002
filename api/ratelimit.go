package api

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/ratelimit"
	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Limits is every request-rate budget of the API: the spec's x-rate-limit
// and the enforcement are both built from it.
type Limits struct {
	Session ratelimit.Rate // per session, every operation
	IP      ratelimit.Rate // per client IP, public operations
	APIKey  ratelimit.Rate // per API key, operations without their own budget
	// StreamOpens bounds the streams a session or key opens; StreamUserOpens, a user's.
	StreamOpens, StreamUserOpens ratelimit.Rate
	// Override returns the configured limits of a [WithBudget] budget, if any.
	Override func(name string) ([]ratelimit.Rate, bool, error)
	Store    func(ratelimit.Budget) ratelimit.Limiter // makes a budget's limiter; nil: in memory
	Disabled bool                                     // turns every plane off, to measure what limiting costs
}

// The names of the stream plane's open budgets.
const (
	StreamOpensBudget     = "stream-opens"
	StreamUserOpensBudget = "stream-opens-per-user"
)

// DefaultLimits are the planes' default budgets.
func DefaultLimits() Limits {
	return Limits{
		Session:         ratelimit.Rate{Limit: 120, Window: time.Minute, Burst: 60},
		IP:              ratelimit.Rate{Limit: 30, Window: time.Minute, Burst: 30},
		APIKey:          ratelimit.Rate{Limit: 120, Window: time.Minute, Burst: 60},
		StreamOpens:     ratelimit.Rate{Limit: 60, Window: time.Minute, Burst: 20},
		StreamUserOpens: ratelimit.Rate{Limit: 240, Window: time.Minute, Burst: 80},
	}
}

// withDefaults is l with each plane's zero budget replaced by its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	l.Session, l.IP, l.APIKey = cmp.Or(l.Session, d.Session), cmp.Or(l.IP, d.IP), cmp.Or(l.APIKey, d.APIKey)
	l.StreamOpens, l.StreamUserOpens = cmp.Or(l.StreamOpens, d.StreamOpens), cmp.Or(l.StreamUserOpens, d.StreamUserOpens)
	return l
}

// A Budget is a named set of rates that API-key callers of the operations
// declaring it draw from, instead of the key's default budget:
//
//	var bookmarkBudget = api.Budget{Name: "bookmarks", Default: "100/h; 10/s"}
//	huma.Register(callers, api.WithBudget(op, bookmarkBudget), handler)
type Budget struct {
	// Name ([a-z][a-z0-9-]{0,31}) keys its setting (BRAIN_BUDGETS="bookmarks=200/h")
	// and names its limits: name, name-burst, name-3, ...
	Name string
	// Default is its limits unless configured: "100/h; 10/s" must pass both.
	Default string
}

// WithBudget returns op drawing, for API-key callers, from budget b. Only a
// Caller operation may declare one; [Server.Err] reports a mistake.
func WithBudget(op huma.Operation, b Budget) huma.Operation {
	declare(&op, func(d *Declaration) { d.Budget = b })
	return op
}

func limitNames(name string, rates []ratelimit.Rate) []ratelimit.Limit {
	out := make([]ratelimit.Limit, len(rates))
	for i, r := range rates {
		out[i] = ratelimit.Limit{Name: name, Rate: r}
		if i == 1 {
			out[i].Name += "-burst"
		} else if i > 1 {
			out[i].Name += "-" + strconv.Itoa(i+1)
		}
	}
	return out
}

// A PlaneBudget is the limiter of one budget, and the plane it belongs to. A
// handler that admits its requests itself (Declaration.Draws) draws from the
// stream plane's ([Server.PlaneBudget]), with the store, metrics and 429 of
// every budget.
type PlaneBudget struct {
	name    string // the plane: session, apikey, ip, stream
	limiter ratelimit.Limiter
	headers *ratelimit.Headers
	count   Decisions
}

// plan is which plane applies to an operation for each kind of caller.
type plan struct {
	session, apikey, ip *PlaneBudget
	deferred            bool // the handler charges after the login back-off
	selfAdmitting       bool // the handler admits its requests, from caps and own
	caps                []ConcurrencyCap
	own                 []*PlaneBudget
}

// planes are the budget limiters of one server.
type planes struct {
	api                 huma.API // set before the first operation is registered
	limits              Limits
	now                 func() time.Time
	refused             refusedIPs // by the ip plane: see requireCaller
	login               *auth.LoginThrottle
	session, ip, apikey *PlaneBudget
	metrics             *Metrics
	ops                 map[string]*PlaneBudget // by budget name
	declared            map[string]Budget       // each budget as first declared
	errs                []error
	failed              map[string]bool // budgets whose mistake is in errs
	refusals            *refusals
	own                 map[string]*PlaneBudget // the stream plane's, by name
}

func newPlanes(l Limits, m *Metrics, now func() time.Time, login *auth.LoginThrottle) *planes {
	if l.Store == nil {
		l.Store = func(p ratelimit.Budget) ratelimit.Limiter { return ratelimit.NewMemory(p, ratelimit.MemoryOptions{}) }
	}
	ps := &planes{
		limits:   l,
		now:      now,
		login:    login,
		metrics:  m,
		ops:      map[string]*PlaneBudget{},
		declared: map[string]Budget{},
		failed:   map[string]bool{},
		refusals: newRefusals(m, now),
	}
	ps.session = ps.newLimiter("session", "session", ratelimit.Limit{Name: "session", Rate: l.Session})
	ps.ip = ps.newLimiter("ip", "ip", ratelimit.Limit{Name: "ip", Rate: l.IP})
	ps.apikey = ps.newLimiter("apikey", "apikey", ratelimit.Limit{Name: "apikey", Rate: l.APIKey})
	ps.own = map[string]*PlaneBudget{
		StreamOpensBudget:     ps.newLimiter("stream", StreamOpensBudget, ratelimit.Limit{Name: StreamOpensBudget, Rate: l.StreamOpens}),
		StreamUserOpensBudget: ps.newLimiter("stream", StreamUserOpensBudget, ratelimit.Limit{Name: StreamUserOpensBudget, Rate: l.StreamUserOpens}),
	}
	return ps
}

func (ps *planes) newLimiter(planeName, budget string, limits ...ratelimit.Limit) *PlaneBudget {
	b := ratelimit.Budget{Name: budget, Limits: limits}
	pl := &PlaneBudget{name: planeName, limiter: ps.limits.Store(b), headers: ratelimit.NewHeaders(b), count: ps.metrics.Decisions(planeName, budget)}
	ps.metrics.observeLimiter(pl)
	return pl
}

// keyBudget returns the limiter of budget b, made on its first use. On a
// mistake (in ps.errs) the key's default budget serves instead.
func (ps *planes) keyBudget(op *huma.Operation, b Budget) *PlaneBudget {
	if !budgetName.MatchString(b.Name) || reserved[b.Name] {
		ps.errs = append(ps.errs, fmt.Errorf("operation %s: budget %q: a name is 1 to 32 of a-z, 0-9 and -, starting with a letter, and not session, ip, apikey, login, stream, streams, streams-per-user, %s or %s", op.OperationID, b.Name, StreamOpensBudget, StreamUserOpensBudget))
		return ps.apikey
	}
	if ps.failed[b.Name] {
		return ps.apikey // its mistake is reported once
	}
	if p, ok := ps.ops[b.Name]; ok {
		if ps.declared[b.Name] != b {
			ps.errs = append(ps.errs, fmt.Errorf("operation %s declares budget %q with the default %q, but an operation before it declared %q: declare the budget once, as a variable, and name it on both", op.OperationID, b.Name, b.Default, ps.declared[b.Name].Default))
		}
		return p
	}
	rates, err := ratelimit.ParseRates(b.Default)
	if err != nil {
		err = fmt.Errorf("its default: %w", err)
	} else if ps.limits.Override != nil {
		if o, ok, oerr := ps.limits.Override(b.Name); oerr != nil {
			err = oerr
		} else if ok {
			rates = o
		}
	}
	budget := ratelimit.Budget{Name: b.Name, Limits: limitNames(b.Name, rates)}
	if err == nil {
		err = budget.Validate()
	}
	if err != nil {
		ps.errs = append(ps.errs, fmt.Errorf("budget %q (operation %s): %w", b.Name, op.OperationID, err))
		ps.failed[b.Name] = true
		return ps.apikey
	}
	p := ps.newLimiter("apikey", b.Name, budget.Limits...)
	ps.ops[b.Name], ps.declared[b.Name] = p, b
	return p
}

var budgetName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// reserved are the names of the planes' own budgets and caps.
var reserved = map[string]bool{"session": true, "ip": true, "apikey": true, "login": true, "stream": true,
	"streams": true, "streams-per-user": true, StreamOpensBudget: true, StreamUserOpensBudget: true}

// planFor decides which planes apply to op, which declares d.
func (ps *planes) planFor(op *huma.Operation, d *Declaration) *plan {
	access, budget := d.access(), d.Budget != (Budget{})
	if budget && access != Caller {
		ps.errs = append(ps.errs, fmt.Errorf("operation %s declares a budget, but its access is %s: a budget is for the API-key callers of a Caller operation", op.OperationID, access))
	}
	switch {
	case ps.limits.Disabled, access == Probe:
		return nil
	case len(d.Caps) > 0 || len(d.Draws) > 0:
		pl := &plan{selfAdmitting: true, caps: d.Caps}
		for _, name := range d.Draws {
			if own := ps.own[name]; own != nil {
				pl.own = append(pl.own, own)
			} else {
				ps.errs = append(ps.errs, fmt.Errorf("operation %s draws from %q, which is no plane budget (there are %s and %s)", op.OperationID, name, StreamOpensBudget, StreamUserOpensBudget))
			}
		}
		return pl
	case access == Public:
		return &plan{ip: ps.ip, deferred: d.LoginBackoff}
	}
	p := &plan{session: ps.session, apikey: ps.apikey, deferred: d.LoginBackoff}
	if access == Session {
		p.apikey = nil
	} else if budget {
		p.apikey = ps.keyBudget(op, d.Budget)
	}
	return p
}

// A ConcurrencyCap bounds an operation's requests in progress at once; its
// handler enforces it (Declaration.Caps).
type ConcurrencyCap struct {
	Plane, Policy string
	Concurrent    int
}

// RateLimitEntry is one budget in an operation's x-rate-limit extension.
type RateLimitEntry struct {
	Plane      string `json:"plane"`
	Policy     string `json:"policy"`
	Limit      int    `json:"limit,omitempty"`
	WindowS    int    `json:"window_s,omitempty"`
	Burst      int    `json:"burst,omitempty"`
	Concurrent int    `json:"concurrent,omitempty"`
	Failures   int    `json:"failures,omitempty"`
	IPFailures int    `json:"ip_failures,omitempty"`
	BackoffS   []int  `json:"backoff_s,omitempty"`
	// AppliesTo is "unauthenticated" (401s, on the ip plane) or "forbidden" (403s).
	AppliesTo string `json:"applies_to,omitempty"`
}

// appendEntries appends the entries of ps' limits, applying to appliesTo.
func appendEntries(out []RateLimitEntry, appliesTo string, ps ...*PlaneBudget) []RateLimitEntry {
	for _, p := range ps {
		for _, l := range p.Budget().Limits {
			out = append(out, RateLimitEntry{Plane: p.name, Policy: l.Name, Limit: l.Limit,
				WindowS: int(l.Window / time.Second), Burst: l.Burst, AppliesTo: appliesTo})
		}
	}
	return out
}

const (
	refRateLimited            = "#/components/responses/RateLimited"
	refRateLimitedOrBackedOff = "#/components/responses/RateLimitedOrBackedOff"
	refHeader                 = "#/components/headers/"
)

// declareComponents adds the shared responses (429, 503) and headers.
func declareComponents(c *huma.Components) {
	str := func(desc, example string) *huma.Header {
		return &huma.Header{Description: desc, Required: true, Schema: &huma.Schema{Type: "string", Examples: []any{example}}}
	}
	num := func(desc string, example int) *huma.Header {
		return &huma.Header{Description: desc, Required: true, Schema: &huma.Schema{Type: "integer", Minimum: new(0.0), Examples: []any{example}}}
	}
	if c.Headers == nil {
		c.Headers = map[string]*huma.Header{}
	}
	c.Headers["RateLimit"] = str(`Each budget that applies and what is left of it (draft-ietf-httpapi-ratelimit-headers-10): r = whole requests left, t = seconds until the budget is full again.`, `"session";r=57;t=12`)
	c.Headers["RateLimit-Policy"] = str(`Each budget that applies: q = requests per window, w = the window in seconds; for the stream plane's caps, q = open streams and qu="concurrent-requests".`, `"session";q=120;w=60`)
	c.Headers["X-RateLimit-Limit"] = num("Legacy: the requests per window of the budget with the fewest requests left (on a stream, of its open budget; of a cap only when the cap refused it, before the budget was asked).", 120)
	c.Headers["X-RateLimit-Remaining"] = num("Legacy: whole requests left in that budget.", 57)
	c.Headers["X-RateLimit-Reset"] = num("Legacy: when that budget is full again, in Unix epoch seconds (for a cap that refused a stream, when its Retry-After ends: a cap has no clock).", 1796040012)
	c.Headers["Retry-After"] = &huma.Header{Description: "Seconds until a request would be admitted (at least 1).", Required: true,
		Schema: &huma.Schema{Type: "integer", Minimum: new(1.0), Examples: []any{3}}}
	if c.Responses == nil {
		c.Responses = map[string]*huma.Response{}
	}
	headers := map[string]*huma.Header{"Retry-After": {Ref: refHeader + "Retry-After"}}
	for _, h := range ratelimit.HeaderNames {
		headers[h] = &huma.Header{Ref: refHeader + h}
	}
	c.Responses["RateLimited"] = &huma.Response{
		Description: "rate-limited: a budget is spent. details.scope, details.policy and Retry-After say which and for how long. Throttle, never ban: wait and retry.",
		Headers:     headers,
		Content:     errorContent(RateLimited("session", "session", 120, time.Minute, 3*time.Second)),
	}
	optional := map[string]*huma.Header{"Retry-After": {Ref: refHeader + "Retry-After"}}
	for _, h := range ratelimit.HeaderNames {
		o := *c.Headers[h]
		o.Required = false
		o.Description += " Absent when the back-off refused (details.scope login)."
		optional[h] = &o
	}
	c.Responses["RateLimitedOrBackedOff"] = &huma.Response{
		Description: "rate-limited: a budget is spent (details.scope names its plane, and the rate-limit headers describe it), or the back-off refused the request before any budget was charged (details.scope login: Retry-After only). Throttle, never ban: wait and retry.",
		Headers:     optional,
		Content:     errorContent(RateLimited("login", "login", 5, 0, 30*time.Second)),
	}
	c.Responses["Unavailable"] = &huma.Response{
		Description: "unavailable: not the client's fault. A store " + product.Name + " depends on (the database, or Redis for rate limits) does not answer or is too slow, " +
			"too many passwords are being checked at once, or (on an operation that says so) too many large bodies are in flight. " +
			"Retry after Retry-After seconds. On /ready, details.errors lists the checks that failed.",
		Headers: map[string]*huma.Header{"Retry-After": {Ref: refHeader + "Retry-After"}},
		Content: errorContent(NewError(http.StatusServiceUnavailable, "")),
	}
	c.Headers["Cache-Control"] = &huma.Header{Required: true, Schema: &huma.Schema{Type: "string", Enum: []any{noStore}},
		Description: "no-store: the answer is the caller's own (its data, or a secret), and no cache, shared or private, may keep it. Every answer to a request whose caller is known has it, whatever its status."}
}

// declareRateLimits makes op's plan, documents it and enforces it.
func (ps *planes) declareRateLimits(op *huma.Operation, d *Declaration) {
	if d.LoginBackoff { // its back-off refusals are counted even with no plan (LoginBackedOff)
		op.Middlewares = append(op.Middlewares, ps.refusals.carry)
	}
	pl := ps.planFor(op, d)
	if pl == nil {
		return
	}
	if !pl.selfAdmitting { // else its handler enforces its plan
		op.Middlewares = append(op.Middlewares, ps.enforce(pl, d.RateKey))
	}
	if op.Extensions == nil {
		op.Extensions = map[string]any{}
	}
	op.Extensions["x-rate-limit"] = ps.rateLimitEntries(pl, d.access())
	declareRateLimitResponses(op, pl)
}

// rateLimitEntries lists every budget and cap that can refuse a request
// under pl, in x-rate-limit's order.
func (ps *planes) rateLimitEntries(pl *plan, access Access) []RateLimitEntry {
	var entries []RateLimitEntry
	for _, c := range pl.caps { // caps, then budgets: the order its handler decides them in
		entries = append(entries, RateLimitEntry{Plane: c.Plane, Policy: c.Policy, Concurrent: c.Concurrent})
	}
	entries = appendEntries(entries, "", pl.own...)
	for _, p := range []*PlaneBudget{pl.ip, pl.session, pl.apikey} {
		if p != nil {
			entries = appendEntries(entries, "", p)
		}
	}
	if pl.ip == nil { // an operation that needs a caller: its 401s draw from the ip plane
		entries = appendEntries(entries, "unauthenticated", ps.ip)
	}
	entries = appendEntries(entries, "forbidden", ps.forbiddenPlanes(pl, access)...)
	if pl.deferred {
		th := ps.login
		entries = append(entries, RateLimitEntry{Plane: "login", Policy: "login", Failures: th.UserFailures, IPFailures: th.IPFailures,
			BackoffS: []int{int(th.BaseDelay / time.Second), int(th.MaxDelay / time.Second)}})
	}
	return entries
}

// forbiddenPlanes returns the planes a caller's 403 draws from.
func (ps *planes) forbiddenPlanes(pl *plan, access Access) []*PlaneBudget {
	switch {
	case pl.ip == nil && pl.apikey == nil && !pl.selfAdmitting: // session-only: an API key's 403s draw from its budget
		return []*PlaneBudget{ps.apikey}
	case pl.selfAdmitting && access == Admin: // its handler draws the rest
		return []*PlaneBudget{ps.session, ps.apikey}
	}
	return nil
}

// declareRateLimitResponses gives op its 429 and 503, and the rate-limit
// headers on each of its own responses the limiter sees.
func declareRateLimitResponses(op *huma.Operation, pl *plan) {
	op.Responses["429"] = &huma.Response{Ref: refRateLimited}
	if pl.deferred {
		op.Responses["429"] = &huma.Response{Ref: refRateLimitedOrBackedOff}
	}
	op.Responses["503"] = &huma.Response{Ref: refUnavailable} // the "closed" outage policy, among others
	for status, r := range op.Responses {
		if r.Ref != "" || (pl.ip == nil && status == "403") {
			continue // a caller's 403 comes before the limiter; a 401 is charged to the ip plane
		}
		if r.Headers == nil {
			r.Headers = map[string]*huma.Header{}
		}
		for _, h := range ratelimit.HeaderNames {
			r.Headers[h] = &huma.Header{Ref: refHeader + h}
		}
	}
}

// enforce returns the middleware that charges the caller's budget under pl,
// keyed by the caller or by rateKey's non-empty key.
func (ps *planes) enforce(pl *plan, rateKey func(*http.Request) string) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		var p *PlaneBudget
		var key string
		switch id := auth.FromContext(ctx.Context()); {
		case pl.ip != nil:
			p, key = pl.ip, middleware.ClientKey(ctx.Context())
		case id != nil && id.Method == auth.MethodAPIKey && pl.apikey != nil:
			p, key = pl.apikey, id.APIKeyID
		case id != nil && id.Method == auth.MethodSession:
			p, key = pl.session, id.SessionHash
		default:
			next(ctx)
			return
		}
		if rateKey != nil {
			r, _ := humachi.Unwrap(ctx)
			if k := rateKey(r); k != "" {
				key = protectedKeyPrefix + k // never a client IP's, a session's or a key's bucket
			}
		}
		if pl.deferred {
			c := &deferredCharge{humaContext: ctx, ps: ps, p: p, key: key}
			c.ctx = context.WithValue(ctx.Context(), deferredKey{}, c)
			next(c)
			return
		}
		if !ps.charge(ctx, p, key) {
			next(ctx)
		}
	}
}

// chargeRefused charges a 401 or 403 to p, so a loop on a refusal is
// throttled, and reports whether it answered the request.
func (ps *planes) chargeRefused(ctx huma.Context, p *PlaneBudget, key string) (answered bool) {
	return !ps.limits.Disabled && ps.charge(ctx, p, key)
}

// charge admits a request for key on p, or answers it and reports true.
func (ps *planes) charge(ctx huma.Context, p *PlaneBudget, key string) (answered bool) {
	if e := ps.admit(ctx, p, key); e != nil {
		writeHumaError(ps.api, ctx, e)
		return true
	}
	return false
}

// admit asks p to admit a request for key, writes p's headers, and
// returns the refusal or nil.
func (ps *planes) admit(ctx huma.Context, p *PlaneBudget, key string) *Error {
	d, e := p.Draw(ctx.Context(), key)
	if d.N > 0 { // none while the store is down and the policy is "open"
		_, w := humachi.Unwrap(ctx)
		p.headers.Write(w.Header(), &d)
	}
	if e != nil && e.status == http.StatusTooManyRequests {
		if p == ps.ip && !strings.HasPrefix(key, protectedKeyPrefix) { // an address, whose lookups requireCaller then spares
			ps.refused.add(key, d.Time().Add(d.RetryAfter), d.Time())
		}
		ps.refusals.observe(ctx.Context(), e)
	}
	return e
}

// Draw asks the budget to admit one request for key and counts the
// decision; the refusal is 429, 503 (its cause kept for the log) or 499.
// Outside an operation, the caller writes the decision's headers.
func (p *PlaneBudget) Draw(ctx context.Context, key string) (d ratelimit.Decision, e *Error) {
	d, err := p.limiter.Allow(ctx, key)
	if span := trace.SpanFromContext(ctx); span.IsRecording() { // the request's span tells the decision
		defer func() {
			span.SetAttributes(attribute.String("ratelimit.plane", p.name), attribute.Bool("ratelimit.admitted", e == nil))
			if d.N > 0 {
				span.SetAttributes(attribute.String("ratelimit.policy", p.Budget().Limits[d.Tightest()].Name))
			}
		}()
	}
	switch {
	case err != nil && clientGone(ctx): // not the store's failure: nobody is left to answer
		return d, NewError(StatusClientClosedRequest, "")
	case err != nil:
		p.count.Failed()
		return d, unavailable(product.Name+" cannot check its rate limits right now; retry shortly", err)
	case !d.Allowed:
		p.count.Limited()
		return d, refusal(p, &d)
	}
	p.count.Allowed()
	return d, nil
}

// protectedKeyPrefix keeps the keys of Protect's key functions apart from clients'.
const protectedKeyPrefix = "protect:"

// refusal is the 429 envelope for p's decision d.
func refusal(p *PlaneBudget, d *ratelimit.Decision) *Error {
	l := p.Budget().Limits[d.Tightest()]
	return RateLimited(p.name, l.Name, l.Limit, l.Window, d.RetryAfter)
}

// RateLimited is the API's 429: of a plane's budget (scope), a cap or the
// login back-off (window 0). wait, rounded up to at least 1s, is its Retry-After.
func RateLimited(scope, policy string, limit int, window, wait time.Duration) *Error {
	secs := ratelimit.RetryAfterSeconds(wait)
	e := NewError(http.StatusTooManyRequests, product.Name+" is busy — please retry in a moment.")
	e.Details.Scope, e.Details.Policy, e.Details.Limit = scope, policy, limit
	e.Details.WindowS, e.Details.RetryAfterS = int(window/time.Second), int(secs)
	e.GetHeaders().Set(ratelimit.HeaderRetryAfter, strconv.FormatInt(secs, 10))
	return e
}
