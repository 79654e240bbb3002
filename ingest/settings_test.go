// The memory example's settings: the rows' defaults read back as the
// package constants, each row refuses what is out of bounds, and the
// MEM_RATE_LIMIT_* aliases set parts of the budgets.
package ingest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/store"
)

func TestSettingsDefaultsAreTheConstants(t *testing.T) {
	var s Settings
	table := settingsTable(&s)
	for _, r := range table.Rows {
		if err := r.Set(r.Default); err != nil {
			t.Fatalf("%s's default %q does not parse: %v", r.Env, r.Default, err)
		}
	}
	want := Settings{TTL: DefaultTTL, MaxItems: DefaultMaxItems, MaxQueuedJobs: DefaultMaxQueuedJobs, Workers: store.DefaultWorkers, JobTimeout: store.DefaultJobTimeout}
	if s != want {
		t.Fatalf("the defaults read as %+v, want the constants %+v", s, want)
	}
}

func TestSettingsRefuseOutOfBounds(t *testing.T) {
	var s Settings
	rows := map[string]settings.Setting{}
	for _, r := range settingsTable(&s).Rows {
		rows[r.Env] = r
	}
	for env, bad := range map[string][]string{
		"MEM_IDEMPOTENCY_TTL_SECS": {"59", "7776001", "1h"},
		"BRAIN_MAX_ITEMS":          {"0", "100000001"},
		"BRAIN_MAX_QUEUED_JOBS":    {"0", "1000001"},
		"BRAIN_JOB_WORKERS":        {"0", "17"},
		"BRAIN_JOB_TIMEOUT":        {"999ms", "61m", "30"},
	} {
		r, ok := rows[env]
		if !ok {
			t.Fatalf("no row for %s", env)
		}
		for _, v := range bad {
			if err := r.Set(v); err == nil {
				t.Errorf("%s=%q accepted", env, v)
			}
		}
	}
	if s != (Settings{}) {
		t.Errorf("a refused value was stored: %+v", s)
	}
	if err := rows["MEM_IDEMPOTENCY_TTL_SECS"].Set("3600"); err != nil || s.TTL != time.Hour {
		t.Errorf("MEM_IDEMPOTENCY_TTL_SECS=3600: %v, TTL %v", err, s.TTL)
	}
}

func TestSettingsBudgetAliases(t *testing.T) {
	aliases := settingsTable(&Settings{}).Aliases
	if len(aliases) != 1 {
		t.Fatalf("%d budget aliases, want 1", len(aliases))
	}
	a := aliases[0]
	if want := []string{"MEM_RATE_LIMIT_BURST", "MEM_RATE_LIMIT_INGEST", "MEM_RATE_LIMIT_QUERY", "MEM_RATE_LIMIT_PROJECTS"}; !slices.Equal(a.Envs, want) {
		t.Errorf("Envs = %v, want %v (skills has no hourly limit)", a.Envs, want)
	}
	read := func(kv map[string]string, preset map[string]string) (settings.Overrides, error) {
		o := settings.Overrides{Limits: map[string]string{}, From: map[string]string{}}
		for k, v := range preset {
			o.Limits[k], o.From[k] = v, "BRAIN_BUDGETS"
		}
		return o, a.Read(func(k string) string { return kv[k] }, o)
	}
	o, err := read(map[string]string{"MEM_RATE_LIMIT_INGEST": "200", "MEM_RATE_LIMIT_BURST": "20"}, map[string]string{"query": "7/h"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][2]string{
		"ingest":   {"200/h,burst=200;20/s,burst=20", "MEM_RATE_LIMIT_INGEST and MEM_RATE_LIMIT_BURST"},
		"projects": {"100/h,burst=100;20/s,burst=20", "MEM_RATE_LIMIT_BURST"},
		"skills":   {"20/s,burst=20", "MEM_RATE_LIMIT_BURST"},
		"query":    {"7/h", "BRAIN_BUDGETS"}, // named already: left as it is
	} {
		if o.Limits[name] != want[0] || o.From[name] != want[1] {
			t.Errorf("%s = %q from %q, want %q from %q", name, o.Limits[name], o.From[name], want[0], want[1])
		}
	}
	if o, err := read(nil, nil); err != nil || len(o.Limits) != 0 {
		t.Errorf("with no alias set: %v, %v; want no override", o.Limits, err)
	}
	if _, err := read(map[string]string{"MEM_RATE_LIMIT_QUERY": "lots"}, nil); err == nil || !strings.Contains(err.Error(), "MEM_RATE_LIMIT_QUERY") {
		t.Errorf("a bad alias: %v, want an error naming it", err)
	}
}
