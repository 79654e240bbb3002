package ingest

import (
	"context"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/streams"
	"github.com/prometheus/client_golang/prometheus"
)

type jobCounter interface {
	JobCounts(ctx context.Context) (JobCounts, error)
	QueuedJobs(ctx context.Context) (int64, error)
}

// observeJobs adds the live snapshot's gauge jobs_queued and /metrics'
// brain_jobs, counted from svc's store (0 without one).
func observeJobs(s *api.Server, svc *Service) {
	c, ok := svc.store.(jobCounter)
	queued := func(context.Context) (int64, error) { return 0, nil }
	if ok {
		queued = c.QueuedJobs
	}
	streams.AddGauge(s, "jobs_queued", "Jobs of every user waiting for a worker, on every replica: the database's count.", queued)
	if m := s.Metrics(); ok && m != nil {
		m.Registry().MustRegister(jobsCollector{c})
	}
}

// jobsCollector reports brain_jobs{status}, counted in the database when scraped.
type jobsCollector struct{ c jobCounter }

var jobsDesc = prometheus.NewDesc(product.MetricNamespace+"_jobs", "Jobs of every user by status (queued, running, failed), counted in the database at each scrape.", []string{"status"}, nil)

func (jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- jobsDesc }

func (j jobsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := j.c.JobCounts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(jobsDesc, err)
		return
	}
	for status, v := range map[string]int64{"queued": n.Queued, "running": n.Running, "failed": n.Failed} {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(v), status)
	}
}
