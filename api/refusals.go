package api

import (
	"context"
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

// observe reports refusal e (a 429) of ctx's caller id (nil: ctx's).
func (r *refusals) observe(ctx context.Context, e *Error, id *auth.Identity) {
	if r == nil || e == nil || e.status != http.StatusTooManyRequests {
		return
	}
	plane, policy := e.Details.Scope, e.Details.Policy
	if r.count != nil {
		r.count.WithLabelValues(plane, policy).Inc()
	}
	if id == nil {
		id = auth.FromContext(ctx)
	}
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
