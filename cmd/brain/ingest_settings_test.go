// The memory example's settings as brain reads them: from a flag or a
// variable into the module of each configuration, never another's.
package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"
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
