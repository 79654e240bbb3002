// Command brain runs the brain API server: serve (the default), migrate, user
// add|passwd and openapi. `brain help` lists the commands and the settings.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/brain-template/brain/internal/logwriter"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/auth/account"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/internal/tracing"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
	"github.com/brain-template/brain/web"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal kills at once
	}()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, product.Name+":", err)
		os.Exit(1)
	}
}

// usage lists the commands; -h and help follow it with settingsIntro and the settings.
const usage = `usage: ` + product.Name + ` [command] [settings]

commands:
  serve                        run the server (the default)
  migrate                      bring the database schema up to date and exit
  user add --username NAME     create a user; the password is read from stdin
  user passwd --username NAME  set a user's password, read from stdin, and end
                               all of their sessions
  openapi                      print the OpenAPI document of the default settings
  help                         print this help
`

const settingsIntro = `
serve, migrate and user take these settings, each a flag or an environment
variable (a flag wins over the variable, the variable over the default):

`

// run is the whole program but the process's signals, arguments, environment
// and standard streams, so tests can run it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		cfg, err := parseConfig(product.Name+" serve", args, getenv, stderr, helpText(usage+settingsIntro))
		if err != nil {
			return helpIsNoError(err)
		}
		logs := logwriter.New(stderr) // the access log's lines leave the request path
		defer logs.Close()
		logger := newLogger(cfg, logs)
		tp, stopTracing, err := tracing.Start(ctx, getenv, product.Name, buildVersion())
		if err != nil {
			return fmt.Errorf("tracing (OTEL_EXPORTER_OTLP_ENDPOINT): %w", err)
		}
		if tp != nil { // spans are sent until the server has stopped, then flushed
			defer func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				stopTracing(ctx)
			}()
			logger, cfg.tracer = slog.New(tracing.Logs(logger.Handler())), tp
			logger.Info("tracing on: spans go by OTLP over HTTP", "endpoint", cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT")))
		}
		return serve(ctx, cfg, logger)
	case "migrate":
		cfg, err := parseConfig(product.Name+" migrate", args, getenv, stderr, helpText("usage: "+product.Name+" migrate [settings]\n\nsettings:\n"))
		if err != nil {
			return helpIsNoError(err)
		}
		return migrate(ctx, cfg, stdout)
	case "user":
		return runUser(ctx, args, getenv, stdin, stdout, stderr)
	case "openapi":
		return printSpec(args, stdout)
	case "help":
		_, err := parseConfig(product.Name, []string{"-h"}, getenv, stdout, helpText(usage+settingsIntro))
		return helpIsNoError(err)
	default:
		io.WriteString(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

// helpIsNoError is err, but nil for flag.ErrHelp: the help is printed.
func helpIsNoError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// printSpec writes the OpenAPI document of the default settings.
func printSpec(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("openapi takes no arguments: it always documents the default settings")
	}
	s, err := newServer(defaultConfig(), slog.New(slog.DiscardHandler), running{})
	if err != nil {
		return err
	}
	spec, err := s.Spec()
	if err != nil {
		return err
	}
	_, err = stdout.Write(spec)
	return err
}

// helpText makes a flag set's -h print text, then its flags.
func helpText(text string) func(*flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		fs.Usage = func() {
			io.WriteString(fs.Output(), text)
			fs.PrintDefaults()
		}
	}
}

// running is what a serving brain gives its API beyond the settings.
type running struct {
	db       *store.DB
	auth     *auth.Service
	limiters func(ratelimit.Budget) ratelimit.Limiter
	metrics  *api.Metrics
	ready    []api.Check
	streams  *streams.Runtime
	modules  []api.Feature
}

// newServer builds the API for cfg, for openapi and serve alike. It fails on
// a budget setting no operation declares.
func newServer(cfg Config, logger *slog.Logger, r running) (*api.Server, error) {
	l := cfg.Limits // the budgets of cfg, for the planes and the spec alike
	l.Override, l.Store = cfg.budgetOverride, r.limiters
	site, err := dashboard()
	if err != nil {
		return nil, err
	}
	rt := r.streams
	if rt == nil {
		rt = streams.New(memoryStreams(cfg))
	}
	moduleOps, err := moduleFeatures(cfg, r, logger)
	if err != nil {
		return nil, err
	}
	s := api.New(api.Config{
		Logger:         logger,
		BuildVersion:   buildVersion(),
		Ready:          r.ready,
		Auth:           r.auth,
		TrustedProxies: cfg.TrustedProxies,
		Tracer:         cfg.tracer,
		CORSOrigins:    cfg.CORSOrigins,
		Limits:         l,
		Metrics:        r.metrics,
		Bodies:         api.BodyBudget{InFlight: cfg.BodyBytesInFlight, PerCaller: cfg.BodyBytesPerUser},
		Static:         site,
		Docs:           site.Docs(), // nil when not built: the page the api package renders
		Features: slices.Concat(
			[]api.Feature{ // each feature's operations, a line each
				account.Feature(r.auth, account.Config{CookieSecure: cfg.CookieSecure, Hub: rt.Hub()}),
			},
			moduleOps,
			[]api.Feature{rt.Feature}, // last: the spec lists the Streams tag after the features'
		),
	})
	if err := s.Err(); err != nil {
		return nil, err
	}
	declared := s.Budgets()
	for name := range cfg.Budgets {
		if !slices.Contains(declared, name) {
			return nil, fmt.Errorf("invalid %s: no operation declares a budget named %q (declared: %v)", cfg.budgetFrom[name], name, declared)
		}
	}
	if len(cfg.strays) > 0 {
		known, _ := budgetSettings()
		return nil, fmt.Errorf("invalid %s: no such setting; the budget settings are %s, and an operation's budget is set by its name with %s=name=limits or --budget name=limits (declared: %v)",
			strings.Join(cfg.strays, " and "), strings.Join(known, ", "), budgetsEnv, declared)
	}
	return s, nil
}

// dashboard is the build the binary embeds, read once: the dashboard at / and,
// when built, the docs UI at /docs.
var dashboard = sync.OnceValues(func() (*web.Site, error) { return web.New(web.Dist()) })

// memoryStreams is the streams runtime of cfg in memory, its hub not set.
func memoryStreams(cfg Config) streams.Config {
	sc := cfg.Streams
	sc.Cap, sc.UserCap = streams.NewMemoryCap(cfg.StreamCap), streams.NewMemoryCap(cfg.StreamUserCap)
	return sc
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// buildVersion is the module version, or the VCS revision, or "dev".
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return s.Value[:12]
		}
	}
	return "dev"
}
