// The memory example's settings: the rows' defaults read back as the
// package constants, each row refuses what is out of bounds, and the
// MEM_RATE_LIMIT_* rates make the budgets.

package ingest

import (
	"slices"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/store"
)

func TestSettingsDefaultsAreTheConstants(t *testing.T) {
	var s moduleSettings
	table := settingsTable(&s)
	for _, r := range table.Rows {
		if err := r.Set(r.Default); err != nil {
			t.Fatalf("%s's default %q does not parse: %v", r.Env, r.Default, err)
		}
	}
	want := moduleSettings{TTL: DefaultTTL, MaxItems: DefaultMaxItems, MaxQueuedJobs: DefaultMaxQueuedJobs, Workers: store.DefaultWorkers, JobTimeout: store.DefaultJobTimeout, Rates: DefaultRates}
	if s != want {
		t.Fatalf("the defaults read as %+v, want the constants %+v", s, want)
	}
}

func TestSettingsRefuseOutOfBounds(t *testing.T) {
	var s moduleSettings
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
		"MEM_RATE_LIMIT_INGEST":    {"0", "1000001", "lots"},
		"MEM_RATE_LIMIT_QUERY":     {"0", "1000001"},
		"MEM_RATE_LIMIT_PROJECTS":  {"0", "1000001"},
		"MEM_RATE_LIMIT_BURST":     {"0", "1000001"},
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
	if s != (moduleSettings{}) {
		t.Errorf("a refused value was stored: %+v", s)
	}
	if err := rows["MEM_IDEMPOTENCY_TTL_SECS"].Set("3600"); err != nil || s.TTL != time.Hour {
		t.Errorf("MEM_IDEMPOTENCY_TTL_SECS=3600: %v, TTL %v", err, s.TTL)
	}
}

// The MEM_RATE_LIMIT_* rates are the defaults of the budgets the
// example declares: the hourly limit of ingest, query and projects, and
// the per-second limit of those and skills, which has no hourly one.
func TestSettingsRatesMakeTheBudgets(t *testing.T) {
	var s moduleSettings
	rows := map[string]settings.Setting{}
	for _, r := range settingsTable(&s).Rows {
		rows[r.Env] = r
		if err := r.Set(r.Default); err != nil {
			t.Fatal(err)
		}
	}
	for env, v := range map[string]string{"MEM_RATE_LIMIT_INGEST": "200", "MEM_RATE_LIMIT_BURST": "20"} {
		if err := rows[env].Set(v); err != nil {
			t.Fatalf("%s=%s: %v", env, v, err)
		}
	}
	r := NewService(nil, Config{Rates: s.Rates}).Config().Rates
	for _, b := range []struct {
		got  api.Budget
		want string
	}{
		{r.budget("ingest", r.IngestPerHour), "200/h; 20/s"},
		{r.budget("query", r.QueryPerHour), "1000/h; 20/s"},
		{r.budget("projects", r.ProjectsPerHour), "100/h; 20/s"},
		{r.budget("skills", 0), "20/s"},
	} {
		if b.got.Default != b.want {
			t.Errorf("budget %s: %q, want %q", b.got.Name, b.got.Default, b.want)
		}
	}
	if got := settingsTable(&s).Families; !slices.Equal(got, []string{"MEM_RATE_LIMIT", "MEM_RATELIMIT"}) {
		t.Errorf("the families of the rates' variables: %v", got)
	}
}
