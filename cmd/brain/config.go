package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/connlimit"
	"github.com/brain-template/brain/ingest" // the memory example: delete with ingest/
	"github.com/brain-template/brain/ratelimit"
)

// Config is every setting of the server. Each is a flag and an environment
// variable (the table in docs/configuration.md); a flag wins over the variable, and the
// variable over the default. Defaults need nothing installed.
type Config struct {
	Addr           string
	DataDir        string
	DatabaseURL    string
	RedisURL       string
	RedisPrefix    string
	TrustedProxies []netip.Prefix
	CORSOrigins    []string
	CookieSecure   bool
	AdminPassword  string

	SessionLifetime    time.Duration
	SessionIdleTimeout time.Duration
	MaxSessions        int
	MaxAPIKeys         int
	StoreTimeout       time.Duration
	HashConcurrency    int // 0: GOMAXPROCS
	HashWait           time.Duration

	RateLimitOnStoreError ratelimit.OnStoreError
	LiveAccess            api.Access // who may follow /api/v1/system/live
	MetricsAddr           string

	RateLimitSession ratelimit.Budget
	RateLimitIP      ratelimit.Budget
	RateLimitAPIKey  ratelimit.Budget
	// Budgets are the overrides of the budgets operations declare, by
	// name: BRAIN_BUDGETS (space-separated name=limits), then the
	// --budget name=limits flags. budgetFrom says where each came from.
	Budgets    map[string]string
	budgetFrom map[string]string
	// strays are the variables set that look like budget settings but
	// are none (budgetFamilies): newServer, which knows the budgets the
	// operations declare, refuses them.
	strays []string

	// Memory are the memory example's settings.
	Memory ingest.Settings // the memory example: delete with ingest/

	// BodyBytesInFlight and BodyBytesPerUser bound the bytes of large
	// request bodies held at once (api.BodyBudget).
	BodyBytesInFlight int64
	BodyBytesPerUser  int64

	StreamCap        int
	StreamUserCap    int
	StreamOpens      ratelimit.Budget
	StreamHeartbeat  time.Duration
	StreamRetryAfter time.Duration

	MaxConns      int // 0: auto, what the descriptor limit allows
	MaxConnsPerIP int

	ShutdownTimeout time.Duration
	LogFormat       string
	LogLevel        slog.Level
}

// A setting ties a flag and an environment variable to a Config field.
type setting struct {
	flag, env, def, usage string
	secret                bool // may hold a password: its value is never shown in usage or errors
	set                   func(c *Config, v string) error
}

var settings = []setting{
	{"addr", "BRAIN_ADDR", "127.0.0.1:8080", "host:port to listen on", false, func(c *Config, v string) error {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return errors.New("want host:port, for example 127.0.0.1:8080 or :8080")
		}
		c.Addr = v
		return nil
	}},
	{"data-dir", "BRAIN_DATA_DIR", "./data", "directory for the embedded database", false, func(c *Config, v string) error {
		if strings.TrimSpace(v) == "" {
			return errors.New("must not be empty")
		}
		c.DataDir = v
		return nil
	}},
	{"database-url", "BRAIN_DATABASE_URL", "", "empty for SQLite in the data dir, or postgres://... to scale out", true, func(c *Config, v string) error {
		if v != "" {
			if err := urlWithScheme(v, "postgres", "postgresql"); err != nil {
				return err
			}
		}
		c.DatabaseURL = v
		return nil
	}},
	{"redis-url", "BRAIN_REDIS_URL", "", "empty for in-memory limits and streams, or redis://... to share them across replicas", true, func(c *Config, v string) error {
		if v != "" {
			if err := urlWithScheme(v, "redis", "rediss"); err != nil {
				return err
			}
		}
		c.RedisURL = v
		return nil
	}},
	{"redis-prefix", "BRAIN_REDIS_PREFIX", "brain:", "prefix of brain's Redis keys, so deployments can share a server", false, func(c *Config, v string) error {
		if v == "" || len(v) > 64 {
			return errors.New("want 1 to 64 characters")
		}
		c.RedisPrefix = v
		return nil
	}},
	{"ratelimit-on-store-error", "BRAIN_RATELIMIT_ON_STORE_ERROR", "local", "while Redis fails: local (decide on this replica), open (admit) or closed (503)", false, func(c *Config, v string) error {
		m, err := ratelimit.ParseOnStoreError(v)
		c.RateLimitOnStoreError = m
		return err
	}},
	{"metrics-addr", "BRAIN_METRICS_ADDR", "127.0.0.1:9464", "host:port of the Prometheus /metrics listener (keep it private), or off", false, func(c *Config, v string) error {
		if v != "off" {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return errors.New("want host:port, or off")
			}
		}
		c.MetricsAddr = v
		return nil
	}},
	{"trusted-proxies", "BRAIN_TRUSTED_PROXIES", "", "comma-separated CIDRs (or addresses) of proxies whose X-Forwarded-For is believed", false, func(c *Config, v string) error {
		c.TrustedProxies = nil
		for _, f := range splitList(v) {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				a, aerr := netip.ParseAddr(f)
				if aerr != nil {
					return fmt.Errorf("%q is neither a CIDR nor an IP address", f)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			c.TrustedProxies = append(c.TrustedProxies, p.Masked())
		}
		return nil
	}},
	{"cors-origins", "BRAIN_CORS_ORIGINS", "", "comma-separated origins (scheme://host[:port]) browsers may call from", false, func(c *Config, v string) error {
		c.CORSOrigins = nil
		for _, f := range splitList(v) {
			u, err := url.Parse(f)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
				return fmt.Errorf("%q is not an origin like https://app.example.com (and * is never allowed)", f)
			}
			c.CORSOrigins = append(c.CORSOrigins, u.Scheme+"://"+strings.ToLower(u.Host))
		}
		return nil
	}},
	{"cookie-secure", "BRAIN_COOKIE_SECURE", "true", "mark the session cookie Secure; false only for plain-HTTP use off localhost", false, func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("want true or false")
		}
		c.CookieSecure = b
		return nil
	}},
	{"admin-password", "BRAIN_ADMIN_PASSWORD", "", "password of the admin user created on first start (prefer the variable: flags show in ps)", true, func(c *Config, v string) error {
		if n := len([]rune(v)); v != "" && (n < auth.MinPasswordLen || n > auth.MaxPasswordLen) {
			return fmt.Errorf("want %d to %d characters", auth.MinPasswordLen, auth.MaxPasswordLen)
		}
		c.AdminPassword = v
		return nil
	}},
	{"session-lifetime", "BRAIN_SESSION_LIFETIME", "168h", "a session's absolute lifetime", false, duration(time.Minute, 366*24*time.Hour, func(c *Config) *time.Duration { return &c.SessionLifetime })},
	{"session-idle-timeout", "BRAIN_SESSION_IDLE_TIMEOUT", "24h", "a session ends after this long without a request", false, duration(time.Minute, 366*24*time.Hour, func(c *Config) *time.Duration { return &c.SessionIdleTimeout })},
	{"max-sessions", "BRAIN_MAX_SESSIONS", "20", "live sessions per user; a login beyond it ends the user's oldest session", false, count(1, 10000, func(c *Config) *int { return &c.MaxSessions })},
	{"max-api-keys", "BRAIN_MAX_API_KEYS", "100", "API keys per user; creating one more answers 409", false, count(1, 100000, func(c *Config) *int { return &c.MaxAPIKeys })},
	{"store-timeout", "BRAIN_STORE_TIMEOUT", "5s", "how long one database call (or transaction) may take before it fails", false, duration(10*time.Millisecond, time.Minute, func(c *Config) *time.Duration { return &c.StoreTimeout })},
	{"hash-concurrency", "BRAIN_HASH_CONCURRENCY", "auto", "password hashes run at once, each holding 19 MiB and a core: auto (one per core, GOMAXPROCS) or a number", false, func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		switch {
		case v == "auto":
			c.HashConcurrency = 0
		case err != nil || n < 1 || n > 1024:
			return errors.New("want auto or a whole number from 1 to 1024")
		default:
			c.HashConcurrency = n
		}
		return nil
	}},
	{"hash-wait", "BRAIN_HASH_WAIT", "1s", "how long a login waits for a free password-hashing slot before it answers 503", false, duration(time.Millisecond, time.Minute, func(c *Config) *time.Duration { return &c.HashWait })},
	{"rate-limit-session", "BRAIN_RATE_LIMIT_SESSION", "120/min,burst=60", "per-session budget, <n>/<s|min|h>[,burst=<b>]", false, budget(func(c *Config) *ratelimit.Budget { return &c.RateLimitSession })},
	{"rate-limit-ip", "BRAIN_RATE_LIMIT_IP", "30/min,burst=30", "per-client-IP budget of unauthenticated requests", false, budget(func(c *Config) *ratelimit.Budget { return &c.RateLimitIP })},
	{"rate-limit-apikey", "BRAIN_RATE_LIMIT_APIKEY", "120/min,burst=60", "per-API-key budget of operations without their own", false, budget(func(c *Config) *ratelimit.Budget { return &c.RateLimitAPIKey })},
	// the memory example: delete with ingest/
	{"idempotency-ttl", "MEM_IDEMPOTENCY_TTL_SECS", "86400", "seconds an ingest's idempotency key names its batch, from the first request", false, func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 60 || n > 90*86400 {
			return errors.New("want a whole number of seconds from 60 to 7776000 (90 days)")
		}
		c.Memory.TTL = time.Duration(n) * time.Second
		return nil
	}},
	// the memory example: delete with ingest/
	{"max-items", "BRAIN_MAX_ITEMS", "1000000", "memory items per user, stored or in jobs not finished; an ingest past it answers 409", false, count(1, 100_000_000, func(c *Config) *int { return &c.Memory.MaxItems })},
	// the memory example: delete with ingest/
	{"max-queued-jobs", "BRAIN_MAX_QUEUED_JOBS", "10000", "ingest jobs per user that are queued or running; an ingest past it answers 409", false, count(1, 1_000_000, func(c *Config) *int { return &c.Memory.MaxQueuedJobs })},
	// the memory example: delete with ingest/
	{"job-workers", "BRAIN_JOB_WORKERS", "4", "ingest jobs this replica works at once (at most 16: each holds a database connection while it works)", false, count(1, 16, func(c *Config) *int { return &c.Memory.Workers })},
	// the memory example: delete with ingest/
	{"job-timeout", "BRAIN_JOB_TIMEOUT", "30s", "how long one attempt of an ingest job may run, 1s to 1h; a job a crash cut off is worked again 10 to 50 s after this much time from its start", false, func(c *Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < time.Second || d > time.Hour {
			return errors.New("want a duration from 1s to 1h, such as 30s")
		}
		c.Memory.JobTimeout = d
		return nil
	}},
	{"body-bytes-in-flight", bodyBytesEnv, "64MiB", "bytes of large request bodies (an ingest's) held at once, all callers together; past it a body is refused before it is read, 503 with Retry-After: 1", false,
		size(leastBodyBytes, 64<<30, func(c *Config) *int64 { return &c.BodyBytesInFlight })},
	{"body-bytes-in-flight-per-user", bodyBytesPerUserEnv, "16MiB", "bytes of large request bodies held at once for one user (or, on a public operation, one client address); at most " + bodyBytesEnv, false,
		size(leastBodyBytes, 64<<30, func(c *Config) *int64 { return &c.BodyBytesPerUser })},
	{"stream-cap", "BRAIN_STREAM_CAP", "16", "open streams per session or API key, across every stream endpoint; one more answers 429", false, count(1, 100000, func(c *Config) *int { return &c.StreamCap })},
	{"stream-user-cap", "BRAIN_STREAM_USER_CAP", "64", "open streams per user, across all of its sessions and API keys and every stream endpoint, at least BRAIN_STREAM_CAP; one more answers 429", false, count(1, 100000, func(c *Config) *int { return &c.StreamUserCap })},
	{"stream-opens", "BRAIN_STREAM_OPENS", "60/min,burst=20", "streams a session or API key may open, <n>/<s|min|h>[,burst=<b>]; one more answers 429", false, budget(func(c *Config) *ratelimit.Budget { return &c.StreamOpens })},
	{"stream-heartbeat", "BRAIN_STREAM_HEARTBEAT", "15s", "how often an idle stream gets a comment line (and renews its slot)", false, duration(10*time.Millisecond, 10*time.Minute, func(c *Config) *time.Duration { return &c.StreamHeartbeat })},
	{"stream-retry-after", "BRAIN_STREAM_RETRY_AFTER", "5s", "the Retry-After of a stream refused by the cap", false, duration(time.Second, time.Hour, func(c *Config) *time.Duration { return &c.StreamRetryAfter })},
	{"max-conns", "BRAIN_MAX_CONNS", "auto", "open connections at most: auto (what the descriptor limit, RLIMIT_NOFILE, allows beside brain's own files) or a number up to that", false, func(c *Config, v string) error {
		if v == "auto" {
			c.MaxConns = 0
			return nil
		}
		limit, known := connlimit.DescriptorLimit()
		most := connlimit.Auto(limit)
		n, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case !known && (err != nil || n < 1 || n > 1<<20):
			return errors.New("want auto or a whole number from 1 to 1048576")
		case err != nil || n < 1 || n > most:
			return fmt.Errorf("want auto or a whole number from 1 to %d: the descriptor limit (RLIMIT_NOFILE) is %d, of which brain keeps %d for its own files; raise the limit (ulimit -n) for more", most, limit, limit-most)
		}
		c.MaxConns = n
		return nil
	}},
	{"max-conns-per-ip", "BRAIN_MAX_CONNS_PER_IP", "256", "open connections from one client address (an IPv6 /64) at most; BRAIN_TRUSTED_PROXIES are exempt", false, count(1, 1<<20, func(c *Config) *int { return &c.MaxConnsPerIP })},
	{"shutdown-timeout", "BRAIN_SHUTDOWN_TIMEOUT", "15s", "how long a shutdown waits for in-flight requests", false, duration(0, time.Hour, func(c *Config) *time.Duration { return &c.ShutdownTimeout })},
	{"live-access", "BRAIN_LIVE_ACCESS", "all", "who may follow /api/v1/system/live (this replica's load): all (every session and API key) or admin (the user admin only)", false, func(c *Config, v string) error {
		switch v {
		case "all":
			c.LiveAccess = api.Caller
		case "admin":
			c.LiveAccess = api.Admin
		default:
			return errors.New("want all or admin")
		}
		return nil
	}},
	{"log-format", "BRAIN_LOG_FORMAT", "text", "text or json", false, func(c *Config, v string) error {
		if v != "text" && v != "json" {
			return errors.New("want text or json")
		}
		c.LogFormat = v
		return nil
	}},
	{"log-level", "BRAIN_LOG_LEVEL", "info", "debug, info, warn or error", false, func(c *Config, v string) error {
		return c.LogLevel.UnmarshalText([]byte(v))
	}},
}

// parseConfig reads the settings from args (flags) and getenv. A bad value
// is an error naming the setting. flag.ErrHelp means -h was asked for; the
// usage has then been written to usage.
// extra defines flags of a subcommand beside the settings.
func parseConfig(name string, args []string, getenv func(string) string, usage io.Writer, extra ...func(*flag.FlagSet)) (Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(usage)
	for _, f := range extra {
		f(fs)
	}
	values := make([]*string, len(settings))
	for i, s := range settings {
		v := s.def
		if e := getenv(s.env); e != "" {
			v = e
		}
		values[i] = new(string)
		help := fmt.Sprintf("%s (env %s)", s.usage, s.env)
		def := v
		if s.secret {
			def = ""
		}
		fs.StringVar(values[i], s.flag, def, help)
		if s.secret {
			*values[i] = v
		}
	}
	budgets, from := budgetFlags{}, map[string]string{}
	for _, entry := range strings.Fields(getenv(budgetsEnv)) {
		if err := budgets.Set(entry); err != nil {
			return Config{}, fmt.Errorf("invalid %s entry %q: %w", budgetsEnv, entry, err)
		}
	}
	for name := range budgets {
		from[name] = budgetsEnv
	}
	if err := memBudgets(getenv, budgets, from); err != nil { // the memory example: delete with ingest/
		return Config{}, err
	}
	flags := budgetFlags{}
	fs.Var(flags, "budget", "name=limits: replace the defaults of an operation's budget, e.g. notes=200/h;10/s (repeatable; env "+budgetsEnv+", space-separated)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	for name, v := range flags {
		budgets[name], from[name] = v, "--budget "+name
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	fromFlag := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { fromFlag[f.Name] = true })
	// named is a setting as the user gave it: its flag, or its variable.
	named := func(flagName, env string) string {
		if fromFlag[flagName] {
			return "--" + flagName
		}
		return env
	}
	c := Config{Budgets: budgets, budgetFrom: from, strays: strayBudgetSettings(getenv)}
	for i, s := range settings {
		if err := s.set(&c, *values[i]); err != nil {
			name := named(s.flag, s.env)
			if s.secret {
				return Config{}, fmt.Errorf("invalid %s: %w", name, err)
			}
			return Config{}, fmt.Errorf("invalid %s=%q: %w", name, *values[i], err)
		}
	}
	if c.BodyBytesPerUser > c.BodyBytesInFlight {
		return Config{}, fmt.Errorf("invalid %s: %d bytes is more than %s (%d): one user cannot hold more than everyone together",
			named("body-bytes-in-flight-per-user", bodyBytesPerUserEnv), c.BodyBytesPerUser, named("body-bytes-in-flight", bodyBytesEnv), c.BodyBytesInFlight)
	}
	if c.StreamUserCap < c.StreamCap { // a user's cap counts the streams of all its sessions and keys
		return Config{}, fmt.Errorf("invalid %s=%d: it must be at least %s (%d): a user's cap counts the streams of all its sessions and API keys, so it cannot be below what one of them may hold",
			named("stream-user-cap", "BRAIN_STREAM_USER_CAP"), c.StreamUserCap, named("stream-cap", "BRAIN_STREAM_CAP"), c.StreamCap)
	}
	return c, nil
}

// The settings of the bytes of bodies in flight, which parseConfig
// checks together.
const (
	bodyBytesEnv        = "BRAIN_BODY_BYTES_IN_FLIGHT"
	bodyBytesPerUserEnv = "BRAIN_BODY_BYTES_IN_FLIGHT_PER_USER"
)

// budgetFlags collects repeated --budget name=limits flags.
type budgetFlags map[string]string

// String is empty: the flag has no default to print.
func (b budgetFlags) String() string { return "" }

// Set reads one --budget name=limits.
func (b budgetFlags) Set(v string) error {
	name, limits, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return errors.New("want name=limits, for example notes=200/h;10/s")
	}
	b[name] = limits
	return nil
}

// memBudgets reads the MEM_RATE_LIMIT_* settings, which set parts of the
// memory operations' budgets: MEM_RATE_LIMIT_INGEST, _QUERY and _PROJECTS
// their hourly limit, MEM_RATE_LIMIT_BURST the per-second limit of all
// four (skills has only that one). A budget BRAIN_BUDGETS names already
// is left as it says; --budget, read later, wins over both.
func memBudgets(getenv func(string) string, budgets, from map[string]string) error { // the memory example: delete with ingest/
	burst, err := memCount(getenv, memBurstEnv)
	if err != nil {
		return err
	}
	for _, b := range ingest.Budgets {
		if _, set := budgets[b.Name]; set {
			continue
		}
		limits, err := ratelimit.ParseBudgets(b.Default)
		if err != nil {
			return err
		}
		hourlyEnv, hourly := "", 0
		if slices.ContainsFunc(limits, func(l ratelimit.Budget) bool { return l.Window == time.Hour }) {
			hourlyEnv = memHourlyEnv(b.Name)
			if hourly, err = memCount(getenv, hourlyEnv); err != nil {
				return err
			}
		}
		var parts []string
		var src []string
		for _, l := range limits {
			switch {
			case l.Window == time.Hour && hourly > 0:
				l = ratelimit.Budget{Limit: hourly, Window: time.Hour, Burst: hourly}
				src = append(src, hourlyEnv)
			case l.Window == time.Second && burst > 0:
				l = ratelimit.Budget{Limit: burst, Window: time.Second, Burst: burst}
				src = append(src, memBurstEnv)
			}
			parts = append(parts, l.String())
		}
		if len(src) > 0 {
			budgets[b.Name], from[b.Name] = strings.Join(parts, ";"), strings.Join(src, " and ")
		}
	}
	return nil
}

// memBurstEnv sets the per-second limit of every memory budget.
const memBurstEnv = "MEM_RATE_LIMIT_BURST" // the memory example: delete with ingest/

// memHourlyEnv is the setting of the hourly limit of the memory budget
// name: set only for a budget that has one (skills has none).
func memHourlyEnv(name string) string { return "MEM_RATE_LIMIT_" + strings.ToUpper(name) } // the memory example: delete with ingest/

// budgetFamilies are the prefixes of the variables that set budgets: a
// variable set under one of them that is no setting is a typo, which
// stops start-up rather than change nothing.
var budgetFamilies = []string{"BRAIN_RATE_LIMIT", "BRAIN_RATELIMIT_", "MEM_RATE_LIMIT", "MEM_RATELIMIT", "BRAIN_BUDGET", "BRAIN_STREAM_OPEN"}

// environ lists the variables of the environment, as os.Environ does:
// how parseConfig finds a misspelt budget setting, which getenv cannot
// name. The values are still read through getenv.
var environ = os.Environ

// budgetSettings are the variables of budgetFamilies that are settings.
func budgetSettings() []string {
	var known []string
	for _, s := range settings {
		if inBudgetFamily(s.env) {
			known = append(known, s.env)
		}
	}
	known = append(known, budgetsEnv)
	known = append(known, memBurstEnv) // the memory example: delete with ingest/
	for _, b := range ingest.Budgets { // the memory example: delete with ingest/
		if limits, err := ratelimit.ParseBudgets(b.Default); err == nil && slices.ContainsFunc(limits, func(l ratelimit.Budget) bool { return l.Window == time.Hour }) {
			known = append(known, memHourlyEnv(b.Name))
		}
	}
	slices.Sort(known)
	return known
}

func inBudgetFamily(env string) bool {
	return slices.ContainsFunc(budgetFamilies, func(p string) bool { return strings.HasPrefix(env, p) })
}

// strayBudgetSettings returns the variables set (with getenv) under a
// budget family that are no setting, sorted.
func strayBudgetSettings(getenv func(string) string) []string {
	known := budgetSettings()
	var strays []string
	for _, kv := range environ() {
		name, _, _ := strings.Cut(kv, "=")
		if inBudgetFamily(name) && getenv(name) != "" && !slices.Contains(known, name) && !slices.Contains(strays, name) {
			strays = append(strays, name)
		}
	}
	slices.Sort(strays)
	return strays
}

// memCount reads a MEM_RATE_LIMIT_* setting: 0 when unset.
func memCount(getenv func(string) string, env string) (int, error) { // the memory example: delete with ingest/
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

// leastBodyBytes is the least the body budgets accept: the largest body
// an operation reads (the memory example's batch, ingest.MaxBodyBytes).
// api.New refuses an operation that reads more than the budgets allow.
const leastBodyBytes = 8 << 20

// budgetsEnv holds budget overrides, space-separated name=limits.
const budgetsEnv = "BRAIN_BUDGETS"

// budgetOverride is the api.Limits.Override of c. A bad value is an error
// naming where it came from.
func (c Config) budgetOverride(name string) ([]ratelimit.Budget, bool, error) {
	v, ok := c.Budgets[name]
	if !ok {
		return nil, false, nil
	}
	b, err := ratelimit.ParseBudgets(v)
	if err != nil {
		return nil, false, fmt.Errorf("invalid %s=%q: %w", c.budgetFrom[name], v, err)
	}
	return b, true, nil
}

// defaultConfig is the configuration with no flags and no environment:
// what `brain openapi` documents.
func defaultConfig() Config {
	c, err := parseConfig("brain", nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		panic("brain: the defaults do not parse: " + err.Error())
	}
	return c
}

func budget(field func(*Config) *ratelimit.Budget) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := ratelimit.ParseBudget(v)
		if err != nil {
			return err
		}
		*field(c) = b
		return nil
	}
}

// duration reads a duration from least to most: every duration setting
// has both bounds, so none can overflow a deadline or promise a client
// a wait of a century.
func duration(least, most time.Duration, field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < least || d > most {
			return fmt.Errorf("want a duration from %v to %v, such as 15s, 30m or 24h", least, most)
		}
		*field(c) = d
		return nil
	}
}

// size reads a number of bytes, lo to hi: a whole number, or one with
// the suffix KiB, MiB or GiB (64MiB).
func size(lo, hi int64, field func(*Config) *int64) func(*Config, string) error {
	return func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		unit := int64(1)
		for suffix, u := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
			if n, ok := strings.CutSuffix(v, suffix); ok {
				v, unit = strings.TrimSpace(n), u
			}
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo/unit || n > hi/unit || n*unit < lo {
			return fmt.Errorf("want a number of bytes from %d (%d MiB) to %d (%d GiB), such as 64MiB", lo, lo>>20, hi, hi>>30)
		}
		*field(c) = n * unit
		return nil
	}
}

func count(lo, hi int, field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("want a whole number from %d to %d", lo, hi)
		}
		*field(c) = n
		return nil
	}
}

func urlWithScheme(v string, schemes ...string) error {
	u, err := url.Parse(v)
	if err == nil {
		for _, s := range schemes {
			if u.Scheme == s && (u.Host != "" || u.Query().Get("host") != "") {
				return nil
			}
		}
	}
	return fmt.Errorf("want a URL starting %s://", schemes[0])
}

func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
