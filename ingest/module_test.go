// The memory example as a module: each holds the settings read into it,
// and without a database documents its operations as they say.

package ingest_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/ingest"
)

// set reads kv into m's settings, and every other row's default.
func set(t *testing.T, m *ingest.Module, kv map[string]string) {
	t.Helper()
	for _, r := range m.Settings().Rows {
		v, ok := kv[r.Env]
		if !ok {
			v = r.Default
		}
		if err := r.Set(v); err != nil {
			t.Fatalf("%s=%q: %v", r.Env, v, err)
		}
	}
}

// spec is the spec of m's operations, started without a database.
func spec(t *testing.T, m *ingest.Module) string {
	t.Helper()
	ops, stop, err := m.Start(context.Background(), nil, nil, slog.New(slog.DiscardHandler))
	if err != nil || ops == nil || stop == nil {
		t.Fatalf("Start without a database: %v, %v, %v; want the operations to document and a stop", ops != nil, stop != nil, err)
	}
	stop()
	raw, err := api.New(api.Config{Features: []api.Feature{ops}}).Spec()
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestModuleDocumentsItsOwnSettings(t *testing.T) {
	tuned, plain := ingest.NewModule(), ingest.NewModule()
	set(t, tuned, map[string]string{"MEM_IDEMPOTENCY_TTL_SECS": "120", "BRAIN_MAX_ITEMS": "5", "BRAIN_MAX_QUEUED_JOBS": "3"})
	set(t, plain, nil)
	for _, tc := range []struct {
		name string
		m    *ingest.Module
		want []string
	}{
		{"tuned", tuned, []string{"last 2m0s from the first request", "hold 5 items", "have 3 jobs queued"}},
		{"at the defaults", plain, []string{"last 24h0m0s from the first request", "hold 1000000 items", "have 10000 jobs queued"}},
	} {
		doc := spec(t, tc.m)
		for _, w := range tc.want {
			if !strings.Contains(doc, w) {
				t.Errorf("the module %s documents no %q: each module states the settings read into it, and only those", tc.name, w)
			}
		}
	}
	if got := tuned.Migrations(); got.Name != ingest.Migrations.Name || got.FS == nil {
		t.Errorf("Migrations = %q, want the example's set %q", got.Name, ingest.Migrations.Name)
	}
}
