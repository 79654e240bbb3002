package api

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/brain-template/brain/internal/product"
)

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
