package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/connlimit"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
)

// The defaults are the package constants the code uses: each setting's
// default string is made from its constant, and reads back as it.
func TestConfigDefaults(t *testing.T) {
	c := defaultConfig()
	limits := api.DefaultLimits()
	checks := []struct {
		name      string
		got, want any
	}{
		{"Addr", c.Addr, "127.0.0.1:8080"},
		{"DataDir", c.DataDir, "./data"},
		{"DatabaseURL", c.DatabaseURL, ""},
		{"RedisURL", c.RedisURL, ""},
		{"CookieSecure", c.CookieSecure, true},
		{"RateLimitOnStoreError", c.RateLimitOnStoreError, ratelimit.Local},
		{"RateLimitSession", c.Limits.Session, limits.Session},
		{"RateLimitIP", c.Limits.IP, limits.IP},
		{"RateLimitAPIKey", c.Limits.APIKey, limits.APIKey},
		{"SessionLifetime", c.Auth.SessionLifetime, auth.DefaultSessionLifetime},
		{"SessionIdleTimeout", c.Auth.IdleTimeout, auth.DefaultIdleTimeout},
		{"MaxSessions", c.Auth.MaxSessions, auth.DefaultMaxSessions},
		{"MaxAPIKeys", c.Auth.MaxAPIKeys, auth.DefaultMaxAPIKeys},
		{"StoreTimeout", c.StoreTimeout, store.DefaultTimeout},
		{"ShutdownTimeout", c.ShutdownTimeout, 15 * time.Second},
		{"HashConcurrency", c.Auth.HashConcurrency, 0}, // auto: GOMAXPROCS
		{"HashWait", c.Auth.HashWait, auth.DefaultHashWait},
		{"MaxConns", c.MaxConns, 0}, // auto: what the descriptor limit allows
		{"MaxConnsPerIP", c.MaxConnsPerIP, 256},
		{"LogLevel", c.LogLevel, slog.LevelInfo},
		{"BodyBytesInFlight", c.BodyBytesInFlight, int64(api.DefaultBodyBytesInFlight)},
		{"BodyBytesPerUser", c.BodyBytesPerUser, int64(api.DefaultBodyBytesPerCaller)},
		{"StreamCap", c.StreamCap, streams.DefaultCap},
		{"StreamUserCap", c.StreamUserCap, streams.DefaultUserCap},
		{"StreamOpens", c.Limits.StreamOpens, limits.StreamOpens},
		{"StreamUserOpens", c.Limits.StreamUserOpens, limits.StreamUserOpens},
		{"StreamHeartbeat", c.Streams.Heartbeat, streams.DefaultHeartbeat},
		{"StreamRetryAfter", c.Streams.RetryAfter, streams.DefaultRetryAfter},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("default %s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	if len(c.Budgets) != 0 {
		t.Errorf("default budget overrides = %v, want none", c.Budgets)
	}
}

// The bytes in flight take a number of bytes, or one with a unit.
func TestConfigBodyBytes(t *testing.T) {
	c, err := parseConfig("brain", []string{"--body-bytes-in-flight", "1GiB"}, env(map[string]string{"BRAIN_BODY_BYTES_IN_FLIGHT_PER_USER": "9000000"}), io.Discard)
	if err != nil || c.BodyBytesInFlight != 1<<30 || c.BodyBytesPerUser != 9000000 {
		t.Fatalf("%d, %d, %v; want 1 GiB and 9000000", c.BodyBytesInFlight, c.BodyBytesPerUser, err)
	}
	if c, err := parseConfig("brain", nil, env(map[string]string{"BRAIN_BODY_BYTES_IN_FLIGHT": "8192KiB", "BRAIN_BODY_BYTES_IN_FLIGHT_PER_USER": "8MiB"}), io.Discard); err != nil || c.BodyBytesInFlight != 8<<20 {
		t.Fatalf("8192KiB: %d, %v", c.BodyBytesInFlight, err)
	}
}

func TestConfigPrecedence(t *testing.T) {
	e := env(map[string]string{"BRAIN_ADDR": ":9000", "BRAIN_MAX_SESSIONS": "4", "BRAIN_HASH_CONCURRENCY": "3", "BRAIN_HASH_WAIT": "250ms",
		"BRAIN_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.7", "BRAIN_CORS_ORIGINS": "https://App.example.com,http://localhost:5173"})
	c, err := parseConfig("brain", []string{"--addr", ":9100"}, e, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":9100" {
		t.Errorf("Addr = %q: the flag should win over BRAIN_ADDR", c.Addr)
	}
	if c.Auth.MaxSessions != 4 {
		t.Errorf("MaxSessions = %d; want the environment's 4", c.Auth.MaxSessions)
	}
	if c.Auth.HashConcurrency != 3 || c.Auth.HashWait != 250*time.Millisecond {
		t.Errorf("HashConcurrency, HashWait = %d, %v; want the environment's 3, 250ms", c.Auth.HashConcurrency, c.Auth.HashWait)
	}
	wantProxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32")}
	if len(c.TrustedProxies) != 2 || c.TrustedProxies[0] != wantProxies[0] || c.TrustedProxies[1] != wantProxies[1] {
		t.Errorf("TrustedProxies = %v, want %v", c.TrustedProxies, wantProxies)
	}
	if strings.Join(c.CORSOrigins, " ") != "https://app.example.com http://localhost:5173" {
		t.Errorf("CORSOrigins = %v", c.CORSOrigins)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string // the setting the message must name
	}{
		{"addr", nil, map[string]string{"BRAIN_ADDR": "8080"}, "BRAIN_ADDR"},
		{"addr_flag", []string{"--addr", "nowhere"}, nil, "--addr"},
		{"database_url", nil, map[string]string{"BRAIN_DATABASE_URL": "mysql://u:pw@h/db"}, "BRAIN_DATABASE_URL"},
		{"redis_url", nil, map[string]string{"BRAIN_REDIS_URL": "localhost:6379"}, "BRAIN_REDIS_URL"},
		{"trusted_proxies", nil, map[string]string{"BRAIN_TRUSTED_PROXIES": "10.0.0.0/33"}, "BRAIN_TRUSTED_PROXIES"},
		// A /0 (or a prefix wider than a /8, a /16 for IPv6) trusts every
		// peer's X-Forwarded-For, or nearly: refused without the
		// opt-in, whose name the message gives (TestTrustEveryPeerWarns).
		{"trusted_proxies_every_v4", nil, map[string]string{"BRAIN_TRUSTED_PROXIES": "10.0.0.1, 0.0.0.0/0"}, "BRAIN_TRUSTED_PROXIES: 0.0.0.0/0 trusts every address"},
		{"trusted_proxies_halves", nil, map[string]string{"BRAIN_TRUSTED_PROXIES": "0.0.0.0/1,128.0.0.0/1"}, "BRAIN_TRUSTED_PROXIES: 0.0.0.0/1 trusts every address, or a large part"},
		{"trusted_proxies_wide_v6", nil, map[string]string{"BRAIN_TRUSTED_PROXIES": "2000::/3"}, "BRAIN_TRUSTED_PROXIES: 2000::/3 trusts every address"},
		{"trusted_proxies_every_v6", nil, map[string]string{"BRAIN_TRUSTED_PROXIES": "::/0", "BRAIN_TRUST_EVERY_PEER": "false"}, "BRAIN_TRUST_EVERY_PEER=true"},
		{"trusted_proxies_any_slash_0_flag", []string{"--trusted-proxies", "192.168.1.1/0"}, nil, "--trusted-proxies: 0.0.0.0/0 trusts every address"},
		{"trust_every_peer", nil, map[string]string{"BRAIN_TRUST_EVERY_PEER": "yes"}, "BRAIN_TRUST_EVERY_PEER"},
		{"cors_star", nil, map[string]string{"BRAIN_CORS_ORIGINS": "*"}, "BRAIN_CORS_ORIGINS"},
		{"cors_path", nil, map[string]string{"BRAIN_CORS_ORIGINS": "https://a.example/app"}, "BRAIN_CORS_ORIGINS"},
		{"cookie_secure", nil, map[string]string{"BRAIN_COOKIE_SECURE": "maybe"}, "BRAIN_COOKIE_SECURE"},
		{"session_budget", nil, map[string]string{"BRAIN_RATE_LIMIT_SESSION": "120/fortnight"}, "BRAIN_RATE_LIMIT_SESSION"},
		{"apikey_budget", nil, map[string]string{"BRAIN_RATE_LIMIT_APIKEY": "0/min"}, "BRAIN_RATE_LIMIT_APIKEY"},
		// 1/h with a burst of ten million would take 1,141 years to refill:
		// its times overflow int64 (a first answer said Retry-After: 893491748).
		{"ip_budget_overflow", nil, map[string]string{"BRAIN_RATE_LIMIT_IP": "1/h,burst=10000000"}, "BRAIN_RATE_LIMIT_IP"},
		{"max_sessions", nil, map[string]string{"BRAIN_MAX_SESSIONS": "0"}, "BRAIN_MAX_SESSIONS"},
		{"max_api_keys", nil, map[string]string{"BRAIN_MAX_API_KEYS": "lots"}, "BRAIN_MAX_API_KEYS"},
		{"store_timeout", nil, map[string]string{"BRAIN_STORE_TIMEOUT": "1ms"}, "BRAIN_STORE_TIMEOUT"},
		{"shutdown", nil, map[string]string{"BRAIN_SHUTDOWN_TIMEOUT": "soon"}, "BRAIN_SHUTDOWN_TIMEOUT"},
		{"log_level", nil, map[string]string{"BRAIN_LOG_LEVEL": "loud"}, "BRAIN_LOG_LEVEL"},
		{"hash_concurrency", nil, map[string]string{"BRAIN_HASH_CONCURRENCY": "0"}, "BRAIN_HASH_CONCURRENCY"},
		{"hash_wait", nil, map[string]string{"BRAIN_HASH_WAIT": "0s"}, "BRAIN_HASH_WAIT"},
		{"body_bytes", nil, map[string]string{"BRAIN_BODY_BYTES_IN_FLIGHT": "1MiB"}, "BRAIN_BODY_BYTES_IN_FLIGHT"},
		{"body_bytes_unit", nil, map[string]string{"BRAIN_BODY_BYTES_IN_FLIGHT": "64MB"}, "BRAIN_BODY_BYTES_IN_FLIGHT"},
		{"body_bytes_per_user", nil, map[string]string{"BRAIN_BODY_BYTES_IN_FLIGHT_PER_USER": "-1"}, "BRAIN_BODY_BYTES_IN_FLIGHT_PER_USER"},
		{"body_bytes_per_user_over_all", nil, map[string]string{"BRAIN_BODY_BYTES_IN_FLIGHT_PER_USER": "128MiB"}, "BRAIN_BODY_BYTES_IN_FLIGHT_PER_USER"},
		{"body_bytes_per_user_flag", []string{"--body-bytes-in-flight-per-user", "1GiB"}, nil, "--body-bytes-in-flight-per-user"},
		{"stream_opens", nil, map[string]string{"BRAIN_STREAM_OPENS": "60/min,burst=0"}, "BRAIN_STREAM_OPENS"},
		{"stream_user_cap", nil, map[string]string{"BRAIN_STREAM_USER_CAP": "0"}, "BRAIN_STREAM_USER_CAP"},
		// A user's cap below one key's: the message names both settings.
		{"stream_user_cap_below_cap", nil, map[string]string{"BRAIN_STREAM_USER_CAP": "8"}, "BRAIN_STREAM_USER_CAP=8: it must be at least BRAIN_STREAM_CAP (" + strconv.Itoa(streams.DefaultCap) + ")"},
		{"stream_user_cap_below_cap_flags", []string{"--stream-cap", "100", "--stream-user-cap", "99"}, nil, "--stream-user-cap=99: it must be at least --stream-cap (100)"},
		{"redis_event_shards", nil, map[string]string{"BRAIN_REDIS_EVENT_SHARDS": "1025"}, "BRAIN_REDIS_EVENT_SHARDS"},
		// Shards under a hash-tagged prefix would share one slot.
		{"redis_event_shards_tagged_prefix", nil, map[string]string{"BRAIN_REDIS_EVENT_SHARDS": "4", "BRAIN_REDIS_PREFIX": "{brain}:"}, `BRAIN_REDIS_EVENT_SHARDS=4: BRAIN_REDIS_PREFIX ("{brain}:") has a hash tag`},
		{"max_conns", nil, map[string]string{"BRAIN_MAX_CONNS": "0"}, "BRAIN_MAX_CONNS"},
		{"max_conns_per_ip", nil, map[string]string{"BRAIN_MAX_CONNS_PER_IP": "none"}, "BRAIN_MAX_CONNS_PER_IP"},
		{"stray_argument", []string{"extra"}, nil, "extra"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig("brain", tc.args, env(tc.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// With BRAIN_TRUST_EVERY_PEER=true, a trusted prefix of every address
// starts the server, which warns at start-up that every peer's
// X-Forwarded-For is believed; without it, start-up stops
// (TestConfigErrors).
func TestTrustEveryPeerWarns(t *testing.T) {
	_, logs, stop := runServer(t, map[string]string{"BRAIN_TRUSTED_PROXIES": "10.0.0.1,::/0", "BRAIN_TRUST_EVERY_PEER": "true"})
	stop()
	if !strings.Contains(logs.String(), `level=WARN msg="BRAIN_TRUSTED_PROXIES trusts every address`) || !strings.Contains(logs.String(), "prefix=::/0") {
		t.Fatalf("no start-up warning naming ::/0 in the log:\n%s", logs)
	}
}

// BRAIN_MAX_CONNS may not promise more connections than the descriptor
// limit allows beside brain's own files: the message says what the
// limit is, and what it allows.
func TestMaxConnsWithinTheDescriptorLimit(t *testing.T) {
	limit, known := connlimit.DescriptorLimit()
	if !known {
		t.Skip("no descriptor limit on this system")
	}
	most := connlimit.Auto(limit)
	c, err := parseConfig("brain", nil, env(map[string]string{"BRAIN_MAX_CONNS": strconv.Itoa(most)}), io.Discard)
	if err != nil || c.MaxConns != most {
		t.Fatalf("BRAIN_MAX_CONNS=%d (all the limit %d allows): %v, MaxConns %d", most, limit, err, c.MaxConns)
	}
	_, err = parseConfig("brain", nil, env(map[string]string{"BRAIN_MAX_CONNS": strconv.Itoa(most + 1)}), io.Discard)
	want := fmt.Sprintf("invalid BRAIN_MAX_CONNS=\"%d\": want auto or a whole number from 1 to %d: the descriptor limit (RLIMIT_NOFILE) is %d", most+1, most, limit)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("BRAIN_MAX_CONNS=%d: %v, want %q...", most+1, err, want)
	}
}

func TestConfigNeverShowsSecrets(t *testing.T) {
	_, err := parseConfig("brain", nil, env(map[string]string{"BRAIN_DATABASE_URL": "mysql://user:s3cret@db/x"}), io.Discard)
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v: want an error that does not repeat the URL's password", err)
	}
	var usage strings.Builder
	_, err = parseConfig("brain", []string{"-h"}, env(map[string]string{"BRAIN_ADMIN_PASSWORD": "s3cret"}), &usage)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	if strings.Contains(usage.String(), "s3cret") || !strings.Contains(usage.String(), "BRAIN_ADMIN_PASSWORD") {
		t.Fatalf("usage must list BRAIN_ADMIN_PASSWORD without its value:\n%s", usage.String())
	}
}

// An operation's budget is overridden by name: BRAIN_BUDGETS, then
// --budget name=limits; a bad value names where it came from.
func TestBudgetOverride(t *testing.T) {
	e := env(map[string]string{"BRAIN_BUDGETS": "notes-sync=50/h;5/s bad=lots notes=1/s"})
	c, err := parseConfig("brain", []string{"--budget", "notes=200/h", "--budget", "tags=7/min;1/s,burst=3"}, e, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		want  []ratelimit.Rate
		found bool
		err   string // the setting the error names
	}{
		{"notes", []ratelimit.Rate{{Limit: 200, Window: time.Hour, Burst: 200}}, true, ""}, // the flag wins
		{"tags", []ratelimit.Rate{{Limit: 7, Window: time.Minute, Burst: 7}, {Limit: 1, Window: time.Second, Burst: 3}}, true, ""},
		{"notes-sync", []ratelimit.Rate{{Limit: 50, Window: time.Hour, Burst: 50}, {Limit: 5, Window: time.Second, Burst: 5}}, true, ""},
		{"bad", nil, false, "BRAIN_BUDGETS"},
		{"other", nil, false, ""},
	}
	for _, tc := range tests {
		got, found, err := c.budgetOverride(tc.name)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want one naming %s", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || found != tc.found || !slices.Equal(got, tc.want) {
			t.Errorf("%s = %v, %v, %v; want %v, %v", tc.name, got, found, err, tc.want, tc.found)
		}
	}
}

// A --budget naming a budget no operation declares stops start-up with a
// message naming it; nothing panics.
func TestUnknownBudgetStopsStartUp(t *testing.T) {
	c, err := parseConfig("brain", []string{"--budget", "notes=200/h"}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newServer(c, slog.New(slog.DiscardHandler), running{}); err == nil || !strings.Contains(err.Error(), "--budget notes") {
		t.Fatalf("err = %v, want one naming --budget notes", err)
	}
	c, err = parseConfig("brain", nil, env(map[string]string{"BRAIN_BUDGETS": "notez=5/h"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newServer(c, slog.New(slog.DiscardHandler), running{}); err == nil || !strings.Contains(err.Error(), "BRAIN_BUDGETS") {
		t.Fatalf("err = %v, want one naming BRAIN_BUDGETS", err)
	}
	// brain serve refuses it before it opens or creates anything.
	dir := t.TempDir()
	err = run(context.Background(), nil, env(map[string]string{"BRAIN_BUDGETS": "notez=5/h", "BRAIN_DATA_DIR": dir, "BRAIN_ADDR": "127.0.0.1:0", "BRAIN_METRICS_ADDR": "off"}), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "BRAIN_BUDGETS") {
		t.Fatalf("serve: err = %v, want one naming BRAIN_BUDGETS", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("serve created %d files before refusing its settings", len(entries))
	}
	if _, err := parseConfig("brain", []string{"--budget", "notes"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("--budget without limits: err = %v", err)
	}
}

// Every setting is bounded: a duration of a century, or a count of a
// billion, stops start-up with a message naming the setting. (Without
// bounds, BRAIN_STREAM_HEARTBEAT=2000000h overflowed the streams' write
// deadline, and BRAIN_STREAM_RETRY_AFTER=876000h promised a 100-year
// Retry-After.)
func TestEverySettingIsBounded(t *testing.T) {
	for _, s := range allSettings(newConfig()) {
		var huge string
		if _, err := time.ParseDuration(s.Default); err == nil {
			huge = "876000h"
		} else if _, err := strconv.Atoi(s.Default); err == nil {
			huge = "1000000000"
		} else {
			continue
		}
		t.Run(s.Env, func(t *testing.T) {
			_, err := parseConfig("brain", nil, env(map[string]string{s.Env: huge}), io.Discard)
			if err == nil || !strings.Contains(err.Error(), s.Env) {
				t.Fatalf("%s=%s: err = %v, want one naming the setting", s.Env, huge, err)
			}
		})
	}
}

// A variable that looks like a budget setting but is none, a typo or a
// guess, stops the binary before it creates anything, naming the variable
// and the settings and budgets it could mean; the real ones start it.
func TestStrayBudgetSettingStopsStartUp(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"BRAIN_RATE_LIMIT_NOSUCHBUDGET", "1/s", "BRAIN_RATE_LIMIT_APIKEY, BRAIN_RATE_LIMIT_IP, BRAIN_RATE_LIMIT_SESSION"},
		{"BRAIN_BUDGET", "bookmarks=5/h", "BRAIN_BUDGETS"},
		{"BRAIN_RATELIMIT_SESSION", "10/s", "BRAIN_RATELIMIT_ON_STORE_ERROR"}, // the other spelling brain uses
		{"BRAIN_RATE_LIMITS_IP", "10/s", "BRAIN_RATE_LIMIT_IP"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantStray(t, tc.name, tc.value, tc.want, "(declared: ") })
	}
	// The settings of the family pass.
	wantPastTheSettings(t, map[string]string{"BRAIN_RATE_LIMIT_SESSION": "10/s", "BRAIN_RATE_LIMIT_IP": "10/s", "BRAIN_RATE_LIMIT_APIKEY": "10/s",
		"BRAIN_STREAM_OPENS": "5/min", "BRAIN_RATELIMIT_ON_STORE_ERROR": "open"})
}

// runBrain runs the test binary as brain (execMainEnv) with only the
// variables kv, for at most 20 s (a brain that starts is killed), and
// returns what it wrote.
func runBrain(t *testing.T, kv map[string]string) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = []string{execMainEnv + "=1"}
	for k, v := range kv {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// wantStray checks that brain with name=value set refuses to start, and
// says it is no such setting and each of wants (the settings and budgets
// it could mean), before it creates a file.
func wantStray(t *testing.T, name, value string, wants ...string) {
	t.Helper()
	dir := t.TempDir()
	out, err := runBrain(t, map[string]string{name: value, "BRAIN_DATA_DIR": dir, "BRAIN_ADDR": "127.0.0.1:0", "BRAIN_METRICS_ADDR": "off"})
	if err == nil || !strings.Contains(out, "invalid "+name+": no such setting") {
		t.Fatalf("brain with %s=%s: %v\n%s\nwant a refusal naming it", name, value, err, out)
	}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("brain with %s=%s:\n%s\nwant it to name %s", name, value, out, w)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("brain created %d file(s) before refusing %s", len(entries), name)
	}
}

// wantPastTheSettings checks that brain with the settings kv goes on to
// bind its port, taken here so that it stops there.
func wantPastTheSettings(t *testing.T, kv map[string]string) {
	t.Helper()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	kv = maps.Clone(kv)
	kv["BRAIN_DATA_DIR"], kv["BRAIN_ADDR"], kv["BRAIN_METRICS_ADDR"] = t.TempDir(), taken.Addr().String(), "off"
	if out, _ := runBrain(t, kv); !strings.Contains(out, taken.Addr().String()+" is in use") {
		t.Fatalf("brain with %v:\n%s\nwant it past the settings, stopped by the port in use", kv, out)
	}
}
