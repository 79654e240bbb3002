// This file declares the memory example's settings, each default made
// from the constant the code uses; BRAIN_BUDGETS and --budget, which
// replace a budget whole, win over the rates.
package ingest

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/store"
)

// moduleSettings are the memory example's settings, which settingsTable
// declares. Zero fields take the defaults.
type moduleSettings struct {
	TTL           time.Duration // Config.TTL
	MaxItems      int           // Config.MaxItems
	MaxQueuedJobs int           // Config.MaxQueuedJobs
	Workers       int           // store.Worker.Workers
	JobTimeout    time.Duration // store.QueueOptions.JobTimeout
	Rates         Rates         // Config.Rates
}

// maxRate bounds each of the MEM_RATE_LIMIT_* rates.
const maxRate = 1_000_000

// settingsTable is the memory example's settings, read into s, and the
// family of its variables that set rate limits, MEM_RATE_LIMIT_* (and
// MEM_RATELIMIT*, a likely misspelling): another variable under them is a
// typo, which stops start-up.
func settingsTable(s *moduleSettings) settings.Table {
	return settings.Table{
		Rows: []settings.Setting{
			{Flag: "idempotency-ttl", Env: "MEM_IDEMPOTENCY_TTL_SECS", Default: strconv.Itoa(int(DefaultTTL / time.Second)),
				Usage: "seconds an ingest's idempotency key names its batch, from the first request", Set: ttlSeconds(&s.TTL)},
			{Flag: "max-items", Env: product.EnvPrefix + "MAX_ITEMS", Default: strconv.Itoa(DefaultMaxItems),
				Usage: "memory items per user, stored or in jobs not finished; an ingest past it answers 409", Set: settings.Int(1, 100_000_000, &s.MaxItems)},
			{Flag: "max-queued-jobs", Env: product.EnvPrefix + "MAX_QUEUED_JOBS", Default: strconv.Itoa(DefaultMaxQueuedJobs),
				Usage: "ingest jobs per user that are queued or running; an ingest past it answers 409", Set: settings.Int(1, 1_000_000, &s.MaxQueuedJobs)},
			{Flag: "job-workers", Env: product.EnvPrefix + "JOB_WORKERS", Default: strconv.Itoa(store.DefaultWorkers),
				Usage: "ingest jobs this replica works at once (at most 16: each holds a database connection while it works)", Set: settings.Int(1, 16, &s.Workers)},
			{Flag: "job-timeout", Env: product.EnvPrefix + "JOB_TIMEOUT", Default: settings.FormatDuration(store.DefaultJobTimeout),
				Usage: "how long one attempt of an ingest job may run, 1s to 1h; a job a crash cut off is worked again 10 to 50 s after this much time from its start", Set: jobTimeout(&s.JobTimeout)},
			{Flag: "rate-limit-ingest", Env: "MEM_RATE_LIMIT_INGEST", Default: strconv.Itoa(DefaultRates.IngestPerHour),
				Usage: "ingests an API key may send an hour: the hourly limit of the ingest budget", Set: settings.Int(1, maxRate, &s.Rates.IngestPerHour)},
			{Flag: "rate-limit-query", Env: "MEM_RATE_LIMIT_QUERY", Default: strconv.Itoa(DefaultRates.QueryPerHour),
				Usage: "queries an API key may send an hour: the hourly limit of the query budget", Set: settings.Int(1, maxRate, &s.Rates.QueryPerHour)},
			{Flag: "rate-limit-projects", Env: "MEM_RATE_LIMIT_PROJECTS", Default: strconv.Itoa(DefaultRates.ProjectsPerHour),
				Usage: "project lists an API key may ask for an hour: the hourly limit of the projects budget", Set: settings.Int(1, maxRate, &s.Rates.ProjectsPerHour)},
			{Flag: "rate-limit-burst", Env: "MEM_RATE_LIMIT_BURST", Default: strconv.Itoa(DefaultRates.PerSecond),
				Usage: "requests an API key may send a second to each of ingest, query, projects and skills: the per-second limit of their budgets", Set: settings.Int(1, maxRate, &s.Rates.PerSecond)},
		},
		Families: []string{"MEM_RATE_LIMIT", "MEM_RATELIMIT"},
	}
}

// ttlSeconds reads MEM_IDEMPOTENCY_TTL_SECS: whole seconds, a minute to
// 90 days.
func ttlSeconds(dst *time.Duration) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 60 || n > 90*86400 {
			return errors.New("want a whole number of seconds from 60 to 7776000 (90 days)")
		}
		*dst = time.Duration(n) * time.Second
		return nil
	}
}

// jobTimeout reads BRAIN_JOB_TIMEOUT: 1s to 1h.
func jobTimeout(dst *time.Duration) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < time.Second || d > time.Hour {
			return errors.New("want a duration from 1s to 1h, such as 30s")
		}
		*dst = d
		return nil
	}
}
