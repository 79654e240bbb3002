package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/connlimit"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
)

// tables are the settings read into c: the platform's, then each module's.
func tables(c *Config) []settings.Table {
	t := []settings.Table{{Rows: platformSettings(c), Families: budgetFamilies}}
	for _, m := range c.modules {
		t = append(t, m.Settings())
	}
	return t
}

func allSettings(c *Config) []settings.Setting {
	var rows []settings.Setting
	for _, t := range tables(c) {
		rows = append(rows, t.Rows...)
	}
	return rows
}

func platformSettings(c *Config) []settings.Setting {
	limits := api.DefaultLimits()
	return []settings.Setting{
		{Flag: "addr", Env: product.EnvPrefix + "ADDR", Default: "127.0.0.1:8080", Usage: "host:port to listen on",
			Set: checked(&c.Addr, "want host:port, for example 127.0.0.1:8080 or :8080", isHostPort)},
		{Flag: "data-dir", Env: product.EnvPrefix + "DATA_DIR", Default: "./data", Usage: "directory for the embedded database",
			Set: checked(&c.DataDir, "must not be empty", func(v string) bool { return strings.TrimSpace(v) != "" })},
		{Flag: "database-url", Env: product.EnvPrefix + "DATABASE_URL", Usage: "empty for SQLite in the data dir, or postgres://... to scale out", Secret: true,
			Set: checked(&c.DatabaseURL, "want a URL starting postgres://", urlOf("postgres", "postgresql"))},
		{Flag: "redis-url", Env: product.EnvPrefix + "REDIS_URL", Usage: "empty for in-memory limits and streams, or redis://... to share them across replicas", Secret: true,
			Set: checked(&c.RedisURL, "want a URL starting redis://", urlOf("redis", "rediss"))},
		{Flag: "redis-prefix", Env: product.EnvPrefix + "REDIS_PREFIX", Default: product.RedisPrefix, Usage: "prefix of " + product.Name + "'s Redis keys, so deployments can share a server",
			Set: checked(&c.RedisPrefix, "want 1 to 64 characters",
				func(v string) bool { return v != "" && len(v) <= 64 })},
		{Flag: "redis-event-shards", Env: product.EnvPrefix + "REDIS_EVENT_SHARDS", Default: "auto", Usage: "Redis streams the stream events are spread over, by user: auto (1 on one Redis, 6 on a Redis Cluster) or a number; every replica must use the same",
			Set: autoOrInt(streams.MaxShards, &c.RedisEventShards)},
		{Flag: "redis-timeout", Env: product.EnvPrefix + "REDIS_TIMEOUT", Default: "100ms", Usage: "how long one Redis call of a rate limit, the login back-off or a stream cap may take before the replica decides without it",
			Set: settings.Duration(time.Millisecond, time.Minute, &c.RedisTimeout)},
		{Flag: "ratelimit-on-store-error", Env: product.EnvPrefix + "RATELIMIT_ON_STORE_ERROR", Default: string(ratelimit.Local), Usage: "while Redis fails: local (decide on this replica), open (admit) or closed (503)",
			Set: settings.Parsed(&c.RateLimitOnStoreError, ratelimit.ParseOnStoreError)},
		{Flag: "metrics-addr", Env: product.EnvPrefix + "METRICS_ADDR", Default: "127.0.0.1:9464", Usage: "host:port of the Prometheus /metrics listener (keep it private), or off",
			Set: checked(&c.MetricsAddr, "want host:port, or off",
				func(v string) bool { return v == "off" || isHostPort(v) })},
		{Flag: "trusted-proxies", Env: trustedProxiesEnv, Usage: "comma-separated CIDRs (or addresses) of proxies whose X-Forwarded-For is believed",
			Set: listOf(&c.TrustedProxies, parsePrefix)},
		{Flag: "trust-every-peer", Env: trustEveryPeerEnv, Default: "false", Usage: "true lets " + trustedProxiesEnv + " hold a prefix of every address (0.0.0.0/0, ::/0) or one wider than an IPv4 /8, an IPv6 /16: every such peer's X-Forwarded-For is then believed, so only behind a proxy every connection passes through",
			Set: settings.Parsed(&c.TrustEveryPeer, parseBool)},
		{Flag: "cors-origins", Env: product.EnvPrefix + "CORS_ORIGINS", Usage: "comma-separated origins (scheme://host[:port]) browsers may call from",
			Set: listOf(&c.CORSOrigins, parseOrigin)},
		{Flag: "cookie-secure", Env: product.EnvPrefix + "COOKIE_SECURE", Default: "true", Usage: "mark the session cookie Secure; false only for plain-HTTP use off localhost",
			Set: settings.Parsed(&c.CookieSecure, parseBool)},
		{Flag: "admin-password", Env: product.EnvPrefix + "ADMIN_PASSWORD", Usage: "password of the admin user created on first start (prefer the variable: flags show in ps)", Secret: true,
			Set: checked(&c.AdminPassword, fmt.Sprintf("want %d to %d characters", auth.MinPasswordLen, auth.MaxPasswordLen),
				func(v string) bool {
					n := len([]rune(v))
					return v == "" || n >= auth.MinPasswordLen && n <= auth.MaxPasswordLen
				})},
		{Flag: "session-lifetime", Env: product.EnvPrefix + "SESSION_LIFETIME", Default: settings.FormatDuration(auth.DefaultSessionLifetime), Usage: "a session's absolute lifetime",
			Set: settings.Duration(time.Minute, 366*24*time.Hour, &c.Auth.SessionLifetime)},
		{Flag: "session-idle-timeout", Env: product.EnvPrefix + "SESSION_IDLE_TIMEOUT", Default: settings.FormatDuration(auth.DefaultIdleTimeout), Usage: "a session ends after this long without a request",
			Set: settings.Duration(time.Minute, 366*24*time.Hour, &c.Auth.IdleTimeout)},
		{Flag: "max-sessions", Env: product.EnvPrefix + "MAX_SESSIONS", Default: strconv.Itoa(auth.DefaultMaxSessions), Usage: "live sessions per user; a login beyond it ends the user's oldest session",
			Set: settings.Int(1, 10000, &c.Auth.MaxSessions)},
		{Flag: "max-api-keys", Env: product.EnvPrefix + "MAX_API_KEYS", Default: strconv.Itoa(auth.DefaultMaxAPIKeys), Usage: "API keys per user; creating one more answers 409",
			Set: settings.Int(1, 100000, &c.Auth.MaxAPIKeys)},
		{Flag: "store-timeout", Env: product.EnvPrefix + "STORE_TIMEOUT", Default: settings.FormatDuration(store.DefaultTimeout), Usage: "how long one database call (or transaction) may take before it fails",
			Set: settings.Duration(10*time.Millisecond, time.Minute, &c.StoreTimeout)},
		{Flag: "hash-concurrency", Env: product.EnvPrefix + "HASH_CONCURRENCY", Default: "auto", Usage: "password hashes run at once, each holding 19 MiB and a core: auto (one per core, GOMAXPROCS) or a number",
			Set: autoOrInt(1024, &c.Auth.HashConcurrency)},
		{Flag: "hash-wait", Env: product.EnvPrefix + "HASH_WAIT", Default: settings.FormatDuration(auth.DefaultHashWait), Usage: "how long a login waits for a free password-hashing slot before it answers 503",
			Set: settings.Duration(time.Millisecond, time.Minute, &c.Auth.HashWait)},
		{Flag: "rate-limit-session", Env: product.EnvPrefix + "RATE_LIMIT_SESSION", Default: limits.Session.String(), Usage: "per-session budget, <n>/<s|min|h>[,burst=<b>]",
			Set: settings.Rate(&c.Limits.Session)},
		{Flag: "rate-limit-ip", Env: product.EnvPrefix + "RATE_LIMIT_IP", Default: limits.IP.String(), Usage: "per-client-IP budget of unauthenticated requests",
			Set: settings.Rate(&c.Limits.IP)},
		{Flag: "rate-limit-apikey", Env: product.EnvPrefix + "RATE_LIMIT_APIKEY", Default: limits.APIKey.String(), Usage: "per-API-key budget of operations without their own",
			Set: settings.Rate(&c.Limits.APIKey)},
		{Flag: "body-bytes-in-flight", Env: bodyBytesEnv, Default: settings.FormatSize(api.DefaultBodyBytesInFlight), Usage: "bytes of large request bodies (an operation's limit over 64 KiB) arrived and held at once, all callers together; a body whose length would pass it is refused before it is read, 503 with Retry-After: 1",
			Set: settings.Size(leastBodyBytes, 64<<30, &c.BodyBytesInFlight)},
		{Flag: "body-bytes-in-flight-per-user", Env: bodyBytesPerUserEnv, Default: settings.FormatSize(api.DefaultBodyBytesPerCaller), Usage: "lengths of large request bodies in flight at once for one user (or, on a public operation, one client address), arrived or not; at most " + bodyBytesEnv,
			Set: settings.Size(leastBodyBytes, 64<<30, &c.BodyBytesPerUser)},
		{Flag: "stream-cap", Env: product.EnvPrefix + "STREAM_CAP", Default: strconv.Itoa(streams.DefaultCap), Usage: "open streams per session or API key, across every stream endpoint; one more answers 429",
			Set: settings.Int(1, 100000, &c.StreamCap)},
		{Flag: "stream-user-cap", Env: product.EnvPrefix + "STREAM_USER_CAP", Default: strconv.Itoa(streams.DefaultUserCap), Usage: "open streams per user, across all of its sessions and API keys and every stream endpoint, at least " + product.EnvPrefix + "STREAM_CAP; one more answers 429",
			Set: settings.Int(1, 100000, &c.StreamUserCap)},
		{Flag: "stream-opens", Env: product.EnvPrefix + "STREAM_OPENS", Default: limits.StreamOpens.String(), Usage: "streams a session or API key may open, <n>/<s|min|h>[,burst=<b>]; one more answers 429",
			Set: settings.Rate(&c.Limits.StreamOpens)},
		{Flag: "stream-user-opens", Env: product.EnvPrefix + "STREAM_USER_OPENS", Default: limits.StreamUserOpens.String(), Usage: "streams a user may open, across all of its sessions and API keys, <n>/<s|min|h>[,burst=<b>]; one more answers 429",
			Set: settings.Rate(&c.Limits.StreamUserOpens)},
		{Flag: "stream-heartbeat", Env: product.EnvPrefix + "STREAM_HEARTBEAT", Default: settings.FormatDuration(streams.DefaultHeartbeat), Usage: "how often an idle stream gets a comment line (and renews its slot)",
			Set: settings.Duration(10*time.Millisecond, 10*time.Minute, &c.Streams.Heartbeat)},
		{Flag: "stream-retry-after", Env: product.EnvPrefix + "STREAM_RETRY_AFTER", Default: settings.FormatDuration(streams.DefaultRetryAfter), Usage: "the Retry-After of a stream refused by the cap",
			Set: settings.Duration(time.Second, time.Hour, &c.Streams.RetryAfter)},
		{Flag: "max-conns", Env: product.EnvPrefix + "MAX_CONNS", Default: "auto", Usage: "open connections at most: auto (what the descriptor limit, RLIMIT_NOFILE, allows beside " + product.Name + "'s own files) or a number up to that",
			Set: maxConnsSetting(&c.MaxConns)},
		{Flag: "max-conns-per-ip", Env: product.EnvPrefix + "MAX_CONNS_PER_IP", Default: "256", Usage: "open connections from one client address (an IPv6 /64) at most; " + product.EnvPrefix + "TRUSTED_PROXIES are exempt",
			Set: settings.Int(1, 1<<20, &c.MaxConnsPerIP)},
		{Flag: "min-receive-rate", Env: product.EnvPrefix + "MIN_RECEIVE_RATE", Default: settings.FormatSize(connlimit.DefaultMinRate), Usage: "bytes a second a request must arrive at, on average, once its first " + settings.FormatDuration(readHeaderTimeout) + " have passed (the headers must arrive in those), never going that long without a byte; a connection that falls behind is cut, and under the connection caps the slowest make room first",
			Set: settings.Size(1<<10, 1<<30, &c.MinReceiveRate)},
		{Flag: "shutdown-timeout", Env: product.EnvPrefix + "SHUTDOWN_TIMEOUT", Default: "15s", Usage: "how long a shutdown waits for in-flight requests",
			Set: settings.Duration(0, time.Hour, &c.ShutdownTimeout)},
		{Flag: "live-access", Env: product.EnvPrefix + "LIVE_ACCESS", Default: "all", Usage: "who may follow /api/v1/system/live (this replica's load): all (every session and API key) or admin (users with the admin role only)",
			Set: settings.Parsed(&c.Streams.LiveAccess, func(v string) (api.Access, error) {
				a, ok := map[string]api.Access{"all": api.Caller, "admin": api.Admin}[v]
				if !ok {
					return a, errors.New("want all or admin")
				}
				return a, nil
			})},
		{Flag: "log-format", Env: product.EnvPrefix + "LOG_FORMAT", Default: "text", Usage: "text or json",
			Set: checked(&c.LogFormat, "want text or json", func(v string) bool { return v == "text" || v == "json" })},
		{Flag: "log-level", Env: product.EnvPrefix + "LOG_LEVEL", Default: "info", Usage: "debug, info, warn or error",
			Set: func(v string) error { return c.LogLevel.UnmarshalText([]byte(v)) }},
	}
}

// checked reads a value ok accepts into dst, else fails with want.
func checked(dst *string, want string, ok func(string) bool) func(string) error {
	return settings.Parsed(dst, func(v string) (string, error) {
		if !ok(v) {
			return "", errors.New(want)
		}
		return v, nil
	})
}

func parseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errors.New("want true or false")
	}
	return b, nil
}

func isHostPort(v string) bool {
	_, _, err := net.SplitHostPort(v)
	return err == nil
}

// urlOf accepts an empty value, or a URL with a host of one of schemes.
func urlOf(schemes ...string) func(string) bool {
	return func(v string) bool {
		u, err := url.Parse(v)
		return v == "" || err == nil && slices.Contains(schemes, u.Scheme) &&
			(u.Host != "" || u.Query().Get("host") != "")
	}
}

// listOf reads comma-separated values, each with parse, into dst.
func listOf[T any](dst *[]T, parse func(string) (T, error)) func(string) error {
	return func(v string) error {
		*dst = nil
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			x, err := parse(f)
			if err != nil {
				return err
			}
			*dst = append(*dst, x)
		}
		return nil
	}
}

// parsePrefix reads a CIDR or an address, masked.
func parsePrefix(f string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(f)
	if err != nil {
		a, aerr := netip.ParseAddr(f)
		if aerr != nil {
			return p, fmt.Errorf("%q is neither a CIDR nor an IP address", f)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return p.Masked(), nil
}

// parseOrigin reads an origin as scheme://host in lower case.
func parseOrigin(f string) (string, error) {
	u, err := url.Parse(f)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Path != "" && u.Path != "/" ||
		u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("%q is not an origin like https://app.example.com (and * is never allowed)", f)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

// autoOrInt reads auto (0) or a whole number from 1 to most.
func autoOrInt(most int, dst *int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		switch {
		case v == "auto":
			*dst = 0
		case err != nil || n < 1 || n > most:
			return fmt.Errorf("want auto or a whole number from 1 to %d", most)
		default:
			*dst = n
		}
		return nil
	}
}

// maxConnsSetting reads auto (0), or a number the descriptor limit allows.
func maxConnsSetting(dst *int) func(string) error {
	return func(v string) error {
		if v == "auto" {
			*dst = 0
			return nil
		}
		limit, known := connlimit.DescriptorLimit()
		most := connlimit.Auto(limit)
		n, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case !known && (err != nil || n < 1 || n > 1<<20):
			return errors.New("want auto or a whole number from 1 to 1048576")
		case err != nil || n < 1 || n > most:
			return fmt.Errorf("want auto or a whole number from 1 to %d: the descriptor limit (RLIMIT_NOFILE) is %d, of which "+product.Name+" keeps %d for its own files; raise the limit (ulimit -n) for more", most, limit, limit-most)
		}
		*dst = n
		return nil
	}
}

// leastBodyBytes is the least the body budgets accept: one body of 8 MiB.
const leastBodyBytes = 8 << 20
