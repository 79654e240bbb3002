package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/streams"
	"go.opentelemetry.io/otel/trace"
)

// Config is every setting of the server (docs/configuration.md): a flag wins
// over its environment variable, and the variable over the default.
type Config struct {
	Addr             string
	DataDir          string
	DatabaseURL      string
	RedisURL         string
	RedisPrefix      string
	RedisTimeout     time.Duration
	RedisEventShards int // 0: 1 on a single Redis, clusterEventShards on a cluster
	TrustedProxies   []netip.Prefix
	TrustEveryPeer   bool // lets TrustedProxies hold a /0, else refused
	CORSOrigins      []string
	CookieSecure     bool
	AdminPassword    string

	// Auth is the sessions', API keys' and password hashing's settings.
	Auth         auth.Config
	StoreTimeout time.Duration

	RateLimitOnStoreError ratelimit.OnStoreError
	MetricsAddr           string

	// Limits are the planes' budgets; Budgets are the overrides of budgets by
	// name (BRAIN_BUDGETS, then --budget), and budgetFrom says where each came from.
	Limits     api.Limits
	Budgets    map[string]string
	budgetFrom map[string]string
	strays     []string // variables set under budgetFamilies that are no setting

	BodyBytesInFlight int64
	BodyBytesPerUser  int64

	StreamCap     int
	StreamUserCap int
	// Streams holds the heartbeat, the Retry-After and who may follow
	// /api/v1/system/live; serve adds the caps and the hub.
	Streams streams.Config

	MaxConns       int // 0: auto, what the descriptor limit allows
	MaxConnsPerIP  int
	MinReceiveRate int64 // bytes a second (connlimit.Config.MinRate)

	ShutdownTimeout time.Duration
	LogFormat       string
	LogLevel        slog.Level

	modules []module             // with this configuration's settings read into them
	tracer  trace.TracerProvider // from the OTEL_ variables (tracing.Start); nil: off
}

func newConfig() *Config { return &Config{modules: modules()} }

// parseConfig reads the settings from args and getenv; flag.ErrHelp means -h
// printed the usage. extra defines a subcommand's flags beside the settings.
func parseConfig(name string, args []string, getenv func(string) string, usage io.Writer, extra ...func(*flag.FlagSet)) (Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(usage)
	for _, f := range extra {
		f(fs)
	}
	c := newConfig()
	rows := allSettings(c)
	values := defineSettings(fs, rows, getenv)
	budgets, from := map[string]string{}, map[string]string{} // from says where each came from
	addBudget := func(entry, source string) error {
		name, limits, ok := strings.Cut(entry, "=")
		if !ok || name == "" {
			return errors.New("want name=limits, for example bookmarks=200/h;10/s")
		}
		budgets[name], from[name] = limits, cmp.Or(source, "--budget "+name)
		return nil
	}
	for _, entry := range strings.Fields(getenv(budgetsEnv)) {
		if err := addBudget(entry, budgetsEnv); err != nil {
			return Config{}, fmt.Errorf("invalid %s entry %q: %w", budgetsEnv, entry, err)
		}
	}
	fs.Func("budget", "name=limits: replace the defaults of an operation's budget, e.g. bookmarks=200/h;10/s (repeatable; env "+budgetsEnv+", space-separated)",
		func(v string) error { return addBudget(v, "") })
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	named := givenAs{}
	fs.Visit(func(f *flag.Flag) { named[f.Name] = true })
	c.Budgets, c.budgetFrom, c.strays = budgets, from, strayBudgetSettings(getenv)
	for i, s := range rows { // an error quotes the value unless it is a secret
		if err := s.Set(*values[i]); err != nil && s.Secret {
			return Config{}, fmt.Errorf("invalid %s: %w", named.name(s.Flag, s.Env), err)
		} else if err != nil {
			return Config{}, fmt.Errorf("invalid %s=%q: %w", named.name(s.Flag, s.Env), *values[i], err)
		}
	}
	if err := c.checkTogether(named); err != nil {
		return Config{}, err
	}
	return *c, nil
}

// defineSettings defines each row's flag on fs, its default the variable's
// value or the row's; a secret's is hidden from -h.
func defineSettings(fs *flag.FlagSet, rows []settings.Setting, getenv func(string) string) []*string {
	values := make([]*string, len(rows))
	for i, s := range rows {
		v := cmp.Or(getenv(s.Env), s.Default)
		def := v
		if s.Secret {
			def = ""
		}
		values[i] = new(string)
		fs.StringVar(values[i], s.Flag, def, fmt.Sprintf("%s (env %s)", s.Usage, s.Env))
		*values[i] = v
	}
	return values
}

// givenAs holds the flags given, to name a setting as the user gave it.
type givenAs map[string]bool

func (g givenAs) name(flagName, env string) string {
	if g[flagName] {
		return "--" + flagName
	}
	return env
}

// checkTogether checks the settings that bound each other.
func (c *Config) checkTogether(named givenAs) error {
	if c.BodyBytesPerUser > c.BodyBytesInFlight {
		return fmt.Errorf("invalid %s: %d bytes is more than %s (%d): one user cannot hold more than everyone together",
			named.name("body-bytes-in-flight-per-user", bodyBytesPerUserEnv), c.BodyBytesPerUser, named.name("body-bytes-in-flight", bodyBytesEnv), c.BodyBytesInFlight)
	}
	if c.RedisEventShards > 1 && streams.HasHashTag(c.RedisPrefix) {
		return fmt.Errorf("invalid %s=%d: %s (%q) has a hash tag, which puts every key, and so every shard, in one slot of a Redis Cluster; set it to 1 or auto, or drop the tag",
			named.name("redis-event-shards", product.EnvPrefix+"REDIS_EVENT_SHARDS"), c.RedisEventShards, named.name("redis-prefix", product.EnvPrefix+"REDIS_PREFIX"), c.RedisPrefix)
	}
	if p, ok := broadPrefix(c.TrustedProxies); ok && !c.TrustEveryPeer {
		return fmt.Errorf("invalid %s: %s trusts every address, or a large part of them, so any client could name itself in X-Forwarded-For (and pick its rate-limit bucket); list the proxies' own addresses, or set %s=true if every connection does pass through a proxy that sets X-Forwarded-For",
			named.name("trusted-proxies", trustedProxiesEnv), p, named.name("trust-every-peer", trustEveryPeerEnv))
	}
	if c.StreamUserCap < c.StreamCap { // a user's cap counts the streams of all its sessions and keys
		return fmt.Errorf("invalid %s=%d: it must be at least %s (%d): a user's cap counts the streams of all its sessions and API keys, so it cannot be below what one of them may hold",
			named.name("stream-user-cap", product.EnvPrefix+"STREAM_USER_CAP"), c.StreamUserCap, named.name("stream-cap", product.EnvPrefix+"STREAM_CAP"), c.StreamCap)
	}
	return nil
}

// broadPrefix returns the first of prefixes wider than an IPv4 /8 or an IPv6 /16.
func broadPrefix(prefixes []netip.Prefix) (netip.Prefix, bool) {
	for _, p := range prefixes {
		if p.Bits() < 8 || (p.Addr().Is6() && p.Bits() < 16) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// The settings parseConfig checks together.
const (
	trustedProxiesEnv   = product.EnvPrefix + "TRUSTED_PROXIES"
	trustEveryPeerEnv   = product.EnvPrefix + "TRUST_EVERY_PEER"
	bodyBytesEnv        = product.EnvPrefix + "BODY_BYTES_IN_FLIGHT"
	bodyBytesPerUserEnv = product.EnvPrefix + "BODY_BYTES_IN_FLIGHT_PER_USER"
)

// budgetFamilies are the prefixes of the platform's budget variables.
var budgetFamilies = []string{product.EnvPrefix + "RATE_LIMIT", product.EnvPrefix + "RATELIMIT_", product.EnvPrefix + "BUDGET", product.EnvPrefix + "STREAM_OPEN"}

// environ lists the variables, to find a misspelt budget setting.
var environ = os.Environ

// budgetSettings returns every table's budget families and the settings under them.
func budgetSettings() (known, families []string) {
	c := newConfig()
	for _, t := range tables(c) {
		families = append(families, t.Families...)
	}
	for _, s := range allSettings(c) {
		if inFamily(s.Env, families) {
			known = append(known, s.Env)
		}
	}
	known = append(known, budgetsEnv)
	slices.Sort(known)
	return known, families
}

func inFamily(env string, families []string) bool {
	return slices.ContainsFunc(families, func(p string) bool { return strings.HasPrefix(env, p) })
}

// strayBudgetSettings returns the variables set under a budget family that are no setting.
func strayBudgetSettings(getenv func(string) string) []string {
	known, families := budgetSettings()
	var strays []string
	for _, kv := range environ() {
		name, _, _ := strings.Cut(kv, "=")
		if inFamily(name, families) && getenv(name) != "" && !slices.Contains(known, name) && !slices.Contains(strays, name) {
			strays = append(strays, name)
		}
	}
	slices.Sort(strays)
	return strays
}

// budgetsEnv holds budget overrides, space-separated name=limits.
const budgetsEnv = product.EnvPrefix + "BUDGETS"

// budgetOverride is the api.Limits.Override of c.
func (c Config) budgetOverride(name string) ([]ratelimit.Rate, bool, error) {
	v, ok := c.Budgets[name]
	if !ok {
		return nil, false, nil
	}
	b, err := ratelimit.ParseRates(v)
	if err != nil {
		return nil, false, fmt.Errorf("invalid %s=%q: %w", c.budgetFrom[name], v, err)
	}
	return b, true, nil
}

// defaultConfig is the configuration `brain openapi` documents.
func defaultConfig() Config {
	c, err := parseConfig(product.Name, nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		panic(product.Name + ": the defaults do not parse: " + err.Error())
	}
	return c
}
