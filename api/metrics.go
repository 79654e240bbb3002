package api

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/brain-template/brain/connlimit"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/ratelimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is the server's Prometheus registry, served by [Metrics.Handler].
type Metrics struct {
	reg       *prometheus.Registry
	decisions *prometheus.CounterVec
}

// Counter returns a feature's counter, registered with m once; on a nil m
// nobody scrapes it.
func (m *Metrics) Counter(opts prometheus.CounterOpts) prometheus.Counter {
	c := prometheus.NewCounter(opts)
	if m == nil {
		return c
	}
	if err := m.reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			return are.ExistingCollector.(prometheus.Counter)
		}
		panic(err)
	}
	return c
}

// NewMetrics returns a registry with the Go and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: product.MetricNamespace + "_ratelimit_decisions_total",
		Help: "Rate-limit decisions by plane, policy and outcome (allowed, limited, error).",
	}, []string{"plane", "policy", "outcome"})
	m.reg.MustRegister(m.decisions)
	return m
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is m's registry, for others' collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Decisions are the counters of one policy's decisions by outcome; the zero
// Decisions counts nothing.
type Decisions struct{ allowed, limited, failed prometheus.Counter }

// Allowed counts a request the policy admitted.
func (d Decisions) Allowed() { inc(d.allowed) }

// Limited counts a request the policy refused (a 429).
func (d Decisions) Limited() { inc(d.limited) }

// Failed counts a decision the policy's store could not make (a 503).
func (d Decisions) Failed() { inc(d.failed) }

// Decisions returns the counters of policy on plane, for a limit decided
// outside this package too.
func (m *Metrics) Decisions(plane, policy string) Decisions {
	if m == nil {
		return Decisions{}
	}
	return Decisions{
		allowed: m.decisions.WithLabelValues(plane, policy, "allowed"),
		limited: m.decisions.WithLabelValues(plane, policy, "limited"),
		failed:  m.decisions.WithLabelValues(plane, policy, "error"),
	}
}

func inc(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}

// counter and gauge register a function's value under name.
func (m *Metrics) counter(name, help string, labels prometheus.Labels, f func() float64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: product.MetricNamespace + name, Help: help, ConstLabels: labels}, f))
}

func (m *Metrics) gauge(name, help string, labels prometheus.Labels, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: product.MetricNamespace + name, Help: help, ConstLabels: labels}, f))
}

// observeLimiter exports what a budget's limiter knows of itself.
func (m *Metrics) observeLimiter(p *PlaneBudget) {
	if m == nil {
		return
	}
	policy := prometheus.Labels{"policy": p.Budget().Name}
	mem, _ := p.limiter.(*ratelimit.Memory)
	var redis *ratelimit.Redis
	if l, ok := p.limiter.(*ratelimit.Resilient); ok {
		mem, _ = l.Fallback().(*ratelimit.Memory)
		redis, _ = l.Store().(*ratelimit.Redis)
		m.counter("_ratelimit_degraded_decisions_total", "Decisions made without the shared store (during an outage).", policy,
			func() float64 { return float64(l.Degraded()) })
	}
	if mem != nil {
		m.gauge("_ratelimit_keys", "Keys tracked in memory.", policy, func() float64 { return float64(mem.Len()) })
	}
	if redis != nil {
		m.counter("_ratelimit_store_requests_total", "Decisions sent to Redis.", policy,
			func() float64 { r, _ := redis.Stats(); return float64(r) })
		m.counter("_ratelimit_deny_cache_hits_total", "Refusals answered from the local deny cache instead of Redis.", policy,
			func() float64 { _, h := redis.Stats(); return float64(h) })
	}
}

// ObserveBreaker exports a store's breaker: errors and whether it is open.
func (m *Metrics) ObserveBreaker(b *ratelimit.Breaker) {
	if m == nil {
		return
	}
	m.counter("_ratelimit_store_errors_total", "Failed calls to the shared rate-limit store.", nil,
		func() float64 { e, _ := b.Stats(); return float64(e) })
	m.gauge("_ratelimit_store_breaker_open", "1 while the shared store is skipped after failures.", nil, func() float64 {
		if _, open := b.Stats(); open {
			return 1
		}
		return 0
	})
}

// ObserveConns exports l's connections: open, idle, refused, closed and cut.
func (m *Metrics) ObserveConns(l *connlimit.Limiter) {
	if m == nil {
		return
	}
	gauge := func(name, help string, v func(connlimit.Stats) int) {
		m.gauge(name, help, nil, func() float64 { return float64(v(l.Stats())) })
	}
	counter := func(name, help string, labels prometheus.Labels, v func(connlimit.Stats) uint64) {
		m.counter(name, help, labels, func() float64 { return float64(v(l.Stats())) })
	}
	gauge("_connections_open", "HTTP connections open, streams' included.", func(s connlimit.Stats) int { return s.Open })
	gauge("_connections_idle", "Open HTTP connections waiting for a request.", func(s connlimit.Stats) int { return s.Idle })
	const refused = "New connections refused because every connection that could make room was busy, by the cap reached."
	counter("_connections_refused_total", refused, prometheus.Labels{"cap": "max"}, func(s connlimit.Stats) uint64 { return s.RefusedMax })
	counter("_connections_refused_total", refused, prometheus.Labels{"cap": "per_ip"}, func(s connlimit.Stats) uint64 { return s.RefusedPerIP })
	counter("_connections_idle_closed_total", "Idle connections closed to make room for new ones.", nil, func(s connlimit.Stats) uint64 { return s.IdleClosed })
	counter("_connections_slow_closed_total", "Slow connections closed to make room for new ones: receiving a request no faster than the minimum rate, or not taking their answer.", nil, func(s connlimit.Stats) uint64 { return s.SlowClosed })
	counter("_connections_too_slow_total", "Connections whose reads were cut for falling behind the minimum rate, or going the grace without a byte.", nil, func(s connlimit.Stats) uint64 { return s.TooSlow })
}

// traffic counts the requests the server answers, and its 429s; with
// metrics it records each request's duration by route and status.
type traffic struct {
	requests  atomic.Uint64
	limited   atomic.Uint64
	durations *prometheus.HistogramVec // nil without metrics
}

func newTraffic(m *Metrics) *traffic {
	t := &traffic{}
	if m != nil {
		t.durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    product.MetricNamespace + "_http_request_duration_seconds",
			Help:    "Requests by route pattern (never the raw path) and status, and how long each took to answer; a stream's, until it took its connection.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "status"})
		m.reg.MustRegister(t.durations)
	}
	return t
}

func (t *traffic) observe(route string, status int, took time.Duration) {
	t.requests.Add(1)
	if status == http.StatusTooManyRequests {
		t.limited.Add(1)
	}
	if t.durations != nil {
		t.durations.WithLabelValues(route, strconv.Itoa(status)).Observe(took.Seconds())
	}
}
