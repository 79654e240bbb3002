// The memory example's settings as brain reads them: from a flag or a
// variable into the module of each configuration, never another's; the
// MEM_RATE_LIMIT_* rates of its budgets, under BRAIN_BUDGETS; a typo of
// them stops start-up.

package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
)

func TestMemorySettingsPerConfiguration(t *testing.T) {
	tuned, err := parseConfig("brain", []string{"--max-items", "5"}, env(map[string]string{"MEM_IDEMPOTENCY_TTL_SECS": "120"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	plain := defaultConfig() // read after tuned, which it must leave as it is
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"tuned", tuned, []string{"last 2m0s from the first request", "hold 5 items"}},
		{"at the defaults", plain, []string{"last 24h0m0s from the first request", "hold 1000000 items"}},
	} {
		s, err := newServer(tc.cfg, slog.New(slog.DiscardHandler), running{})
		if err != nil {
			t.Fatal(err)
		}
		spec, err := s.Spec()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(spec), w) {
				t.Errorf("the spec of the configuration %s states no %q: each configuration's module holds the settings read into it", tc.name, w)
			}
		}
	}
}

// The MEM_RATE_LIMIT_* names set parts of the memory budgets, and the
// spec shows what they set; BRAIN_BUDGETS wins over them; a bad one is
// refused by name.
func TestMemRateSettings(t *testing.T) {
	entries := func(kv map[string]string) map[string]api.RateLimitEntry {
		t.Helper()
		c, err := parseConfig("brain", nil, env(kv), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		s, err := newServer(c, slog.New(slog.DiscardHandler), running{})
		if err != nil {
			t.Fatal(err)
		}
		spec, _ := s.Spec()
		var doc struct {
			Paths map[string]map[string]struct {
				XRateLimit []api.RateLimitEntry `json:"x-rate-limit"`
			}
		}
		if err := json.Unmarshal(spec, &doc); err != nil {
			t.Fatal(err)
		}
		out := map[string]api.RateLimitEntry{}
		for _, item := range doc.Paths {
			for _, op := range item {
				for _, e := range op.XRateLimit {
					if e.Plane == "apikey" {
						out[e.Policy] = e
					}
				}
			}
		}
		return out
	}
	got := entries(map[string]string{"MEM_RATE_LIMIT_INGEST": "200", "MEM_RATE_LIMIT_BURST": "20"})
	if got["ingest"].Limit != 200 || got["ingest"].WindowS != 3600 || got["ingest-burst"].Limit != 20 || got["skills"].Limit != 20 ||
		got["query"].Limit != 1000 || got["query-burst"].Limit != 20 {
		t.Fatalf("with the rates: %+v", got)
	}
	got = entries(map[string]string{"MEM_RATE_LIMIT_INGEST": "200", "BRAIN_BUDGETS": "ingest=7/h"})
	if got["ingest"].Limit != 7 || got["ingest-burst"].Limit != 0 {
		t.Fatalf("BRAIN_BUDGETS wins: %+v", got["ingest"])
	}
	if _, err := parseConfig("brain", nil, env(map[string]string{"MEM_RATE_LIMIT_QUERY": "lots"}), io.Discard); err == nil || !strings.Contains(err.Error(), "MEM_RATE_LIMIT_QUERY") {
		t.Fatalf("a bad rate: %v", err)
	}
}

// A variable under the example's family of rate settings that is none of
// them stops start-up, naming them and the declared budgets; the real
// ones, and BRAIN_BUDGETS naming an example's budget, start it.
func TestMemStrayRateSettingStopsStartUp(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"MEM_RATE_LIMIT_SKILLS", "MEM_RATE_LIMIT_BURST, MEM_RATE_LIMIT_INGEST, MEM_RATE_LIMIT_PROJECTS, MEM_RATE_LIMIT_QUERY"}, // skills has no hourly limit
		{"MEM_RATE_LIMIT_QUERIES", "MEM_RATE_LIMIT_QUERY"},
		{"MEM_RATELIMIT_QUERY", "MEM_RATE_LIMIT_QUERY"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantStray(t, tc.name, "5", tc.want, "skills") })
	}
	wantPastTheSettings(t, map[string]string{"MEM_RATE_LIMIT_INGEST": "5", "MEM_RATE_LIMIT_QUERY": "5", "MEM_RATE_LIMIT_PROJECTS": "5", "MEM_RATE_LIMIT_BURST": "2",
		"BRAIN_BUDGETS": "skills=3/s"})
}
