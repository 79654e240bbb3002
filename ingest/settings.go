// This file declares the memory example's settings: the rows that fill
// Settings (MEM_IDEMPOTENCY_TTL_SECS, BRAIN_MAX_ITEMS,
// BRAIN_MAX_QUEUED_JOBS, BRAIN_JOB_WORKERS, BRAIN_JOB_TIMEOUT), each
// default made from the constant the code uses, and the MEM_RATE_LIMIT_*
// variables that override parts of the memory budgets. cmd/brain reads
// them through the module (Module.Settings), after its own.
package ingest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/store"
)

// Settings are the memory example's settings, which settingsTable
// declares. Zero fields take the defaults.
type Settings struct {
	TTL           time.Duration // Config.TTL
	MaxItems      int           // Config.MaxItems
	MaxQueuedJobs int           // Config.MaxQueuedJobs
	Workers       int           // store.Worker.Workers
	JobTimeout    time.Duration // store.QueueOptions.JobTimeout
}

// settingsTable is the memory example's settings, read into s, and its
// budget aliases.
func settingsTable(s *Settings) settings.Table {
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
		},
		Aliases: []settings.BudgetAlias{{Envs: budgetAliasEnvs(), Families: []string{"MEM_RATE_LIMIT", "MEM_RATELIMIT"}, Read: readBudgetAliases}},
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

// memBurstEnv sets the per-second limit of every memory budget.
const memBurstEnv = "MEM_RATE_LIMIT_BURST"

// hourlyEnv is the setting of the hourly limit of the memory budget
// name: set only for a budget that has one (skills has none).
func hourlyEnv(name string) string { return "MEM_RATE_LIMIT_" + strings.ToUpper(name) }

// hasHourly says whether budget b's defaults have an hourly limit.
func hasHourly(b string) bool {
	limits, err := ratelimit.ParseRates(b)
	return err == nil && slices.ContainsFunc(limits, func(l ratelimit.Rate) bool { return l.Window == time.Hour })
}

// budgetAliasEnvs are the MEM_RATE_LIMIT_* variables: the burst, and the
// hourly limit of each budget that has one.
func budgetAliasEnvs() []string {
	envs := []string{memBurstEnv}
	for _, b := range budgets {
		if hasHourly(b.Default) {
			envs = append(envs, hourlyEnv(b.Name))
		}
	}
	return envs
}

// readBudgetAliases reads the MEM_RATE_LIMIT_* settings, which set parts
// of the memory operations' budgets: MEM_RATE_LIMIT_INGEST, _QUERY and
// _PROJECTS their hourly limit, MEM_RATE_LIMIT_BURST the per-second
// limit of all four (skills has only that one). A budget o names already
// (BRAIN_BUDGETS) is left as it says; --budget, read later, wins over
// both.
func readBudgetAliases(getenv func(string) string, o settings.Overrides) error {
	burst, err := aliasCount(getenv, memBurstEnv)
	if err != nil {
		return err
	}
	for _, b := range budgets {
		if _, set := o.Limits[b.Name]; set {
			continue
		}
		limits, err := ratelimit.ParseRates(b.Default)
		if err != nil {
			return err
		}
		hourlyName, hourly := "", 0
		if hasHourly(b.Default) {
			hourlyName = hourlyEnv(b.Name)
			if hourly, err = aliasCount(getenv, hourlyName); err != nil {
				return err
			}
		}
		var parts, src []string
		for _, l := range limits {
			switch {
			case l.Window == time.Hour && hourly > 0:
				l = ratelimit.Rate{Limit: hourly, Window: time.Hour, Burst: hourly}
				src = append(src, hourlyName)
			case l.Window == time.Second && burst > 0:
				l = ratelimit.Rate{Limit: burst, Window: time.Second, Burst: burst}
				src = append(src, memBurstEnv)
			}
			parts = append(parts, l.String())
		}
		if len(src) > 0 {
			o.Limits[b.Name], o.From[b.Name] = strings.Join(parts, ";"), strings.Join(src, " and ")
		}
	}
	return nil
}

// aliasCount reads a MEM_RATE_LIMIT_* setting: 0 when unset.
func aliasCount(getenv func(string) string, env string) (int, error) {
	v := getenv(env)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 1<<30 {
		return 0, fmt.Errorf("invalid %s=%q: want a whole number of requests, at least 1", env, v)
	}
	return n, nil
}
