package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/expiry"
	"github.com/brain-template/brain/internal/logsample"
	"github.com/brain-template/brain/internal/product"
	"github.com/danielgtaylor/huma/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// refusals counts every 429 by plane and policy, and logs it at most once a
// minute per plane, policy and client, with the refusals not logged since.
type refusals struct {
	sample *logsample.Counts
	count  *prometheus.CounterVec // nil without metrics
}

// maxRefusalKeys bounds the clients the refusal log remembers.
const maxRefusalKeys = 10_000

func newRefusals(m *Metrics, now func() time.Time) *refusals {
	r := &refusals{sample: logsample.New(time.Minute, now, maxRefusalKeys)}
	if m != nil {
		r.count = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: product.MetricNamespace + "_ratelimit_refusals_total",
			Help: "Requests refused with 429, by plane and policy: every budget, the stream caps and the login back-off.",
		}, []string{"plane", "policy"})
		m.reg.MustRegister(r.count)
	}
	return r
}

type refusalsKey struct{}

// carry gives the request's context r, for LoginBackedOff.
func (r *refusals) carry(ctx huma.Context, next func(huma.Context)) {
	next(huma.WithValue(ctx, refusalsKey{}, r))
}

// observe reports refusal e (a 429) of ctx's caller.
func (r *refusals) observe(ctx context.Context, e *Error) {
	if r == nil || e == nil || e.status != http.StatusTooManyRequests {
		return
	}
	plane, policy := e.Details.Scope, e.Details.Policy
	if r.count != nil {
		r.count.WithLabelValues(plane, policy).Inc()
	}
	id := auth.FromContext(ctx)
	level, who := slog.LevelWarn, slog.String("ip", middleware.GetClientIP(ctx))
	if (plane != "ip" && plane != "login") && id != nil {
		level, who = slog.LevelInfo, slog.String("user", id.User.ID)
	}
	l := Logger(ctx)
	if !l.Enabled(ctx, level) {
		return
	}
	key, suppressed, due := r.sample.Take(plane + "\x00" + policy + "\x00" + who.Value.String())
	if !due {
		return
	}
	if key == logsample.Overflow {
		who = slog.String(who.Key, "(one of many)")
	}
	l.LogAttrs(ctx, level, "rate limited", slog.String("plane", plane), slog.String("policy", policy), who,
		slog.Int("retry_after_s", e.Details.RetryAfterS), slog.Int("suppressed", suppressed))
}

// refusedIPs remembers the addresses the ip plane refused, each until its
// budget would admit a request again; at most maxRefusedIPs of them.
type refusedIPs struct {
	n     atomic.Int32 // until.Len(), read without the lock on every request
	mu    sync.Mutex
	until expiry.Set[string]
}

const maxRefusedIPs = 100_000

func (r *refusedIPs) add(ip string, until, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.until.Max = maxRefusedIPs // the zero refusedIPs is ready: its bound is set here
	r.until.Add(ip, until, now)
	r.n.Store(int32(r.until.Len()))
}

func (r *refusedIPs) refusing(ip string, now time.Time) bool {
	if r.n.Load() == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ok := r.until.Has(ip, now)
	r.n.Store(int32(r.until.Len()))
	return ok
}

// A deferredCharge is the huma context of a request whose handler decides
// when it is charged, so an earlier refusal costs no budget. One never
// settled is charged as its response starts, and a refusal replaces it.
type deferredCharge struct {
	humaContext
	ctx      context.Context
	ps       *planes
	p        *PlaneBudget
	key      string
	settled  bool
	refusal  *Error
	replaced bool // the refusal was written; what huma writes next is dropped
}

type deferredKey struct{}

type humaContext = huma.Context

func (c *deferredCharge) Context() context.Context { return c.ctx }

func (c *deferredCharge) Unwrap() huma.Context { return c.humaContext }

func (c *deferredCharge) SetStatus(code int) {
	if c.start() {
		c.humaContext.SetStatus(code)
	}
}

// start charges a request not settled, writes a refusal in place of the
// response, and reports whether the response is still the handler's.
func (c *deferredCharge) start() bool {
	if !c.replaced && c.settle(true) != nil {
		writeHumaError(c.ps.api, c.humaContext, c.refusal)
		c.replaced = true
	}
	return !c.replaced
}

func (c *deferredCharge) SetHeader(name, value string) {
	if !c.replaced {
		c.humaContext.SetHeader(name, value)
	}
}

func (c *deferredCharge) AppendHeader(name, value string) {
	if !c.replaced {
		c.humaContext.AppendHeader(name, value)
	}
}

func (c *deferredCharge) BodyWriter() io.Writer {
	if !c.start() {
		return io.Discard
	}
	return c.humaContext.BodyWriter()
}

// settle charges the request once (when charge is true) and returns the refusal.
func (c *deferredCharge) settle(charge bool) *Error {
	if !c.settled {
		c.settled = true
		if charge {
			c.refusal = c.ps.admit(c, c.p, c.key)
		}
	}
	return c.refusal
}

// ChargeNow charges a deferred request now, and returns the refusal for
// the handler to return; nil in any other operation.
func ChargeNow(ctx context.Context) error {
	if c, ok := ctx.Value(deferredKey{}).(*deferredCharge); ok {
		if e := c.settle(true); e != nil {
			return e
		}
	}
	return nil
}

// SkipCharge settles a deferred charge without charging, for a handler
// that refuses the request itself.
func SkipCharge(ctx context.Context) {
	if c, ok := ctx.Value(deferredKey{}).(*deferredCharge); ok {
		c.settle(false)
	}
}

// LoginBackedOff is the 429 of a password attempt the login back-off
// refused, counted and logged. Return it after [SkipCharge].
func LoginBackedOff(ctx context.Context, te *auth.ThrottledError) *Error {
	e := RateLimited("login", "login", te.Failures, 0, te.RetryAfter)
	if r, ok := ctx.Value(refusalsKey{}).(*refusals); ok {
		r.observe(ctx, e)
	}
	return e
}
