package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/connlimit"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
	"github.com/redis/rueidis"
)

// openRedis connects to BRAIN_REDIS_URL, if set.
func openRedis(cfg Config) (rueidis.Client, error) {
	if cfg.RedisURL == "" {
		return nil, nil
	}
	opt, err := rueidis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf(product.EnvPrefix+"REDIS_URL: %w", err)
	}
	opt.DisableCache = true          // every decision is the server's
	opt.DisableAutoPipelining = true // the limiter batches its calls itself
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf(product.EnvPrefix+"REDIS_URL: cannot reach Redis: %w", err)
	}
	return client, nil
}

// rateLimitStore returns how limiters are made and where the login back-off
// counts: in memory, or in Redis behind one breaker with an in-memory fallback.
func rateLimitStore(cfg Config, client rueidis.Client, logger *slog.Logger, metrics *api.Metrics) (limiters func(ratelimit.Budget) ratelimit.Limiter, backoff func(*auth.LoginThrottle) auth.Backoff, err error) {
	memory := func(p ratelimit.Budget) ratelimit.Limiter { return ratelimit.NewMemory(p, ratelimit.MemoryOptions{}) }
	if client == nil {
		return memory, func(th *auth.LoginThrottle) auth.Backoff { return th }, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ratelimit.CheckRedis(ctx, client, cfg.RedisPrefix+"rl:"); err != nil {
		return nil, nil, fmt.Errorf(product.EnvPrefix+"REDIS_URL: %w", err)
	}
	breaker := ratelimit.NewBreaker()
	breaker.OnStateChange = func(state string, err error) {
		if state == "open" {
			logger.Warn("rate-limit store unavailable; deciding without it", "policy", cfg.RateLimitOnStoreError, "error", err)
		} else {
			logger.Info("rate-limit store is back")
		}
	}
	metrics.ObserveBreaker(breaker)
	logger.Info("rate limits and the login back-off shared in Redis", "on_store_error", cfg.RateLimitOnStoreError)
	limiters = func(p ratelimit.Budget) ratelimit.Limiter {
		l := ratelimit.NewResilient(ratelimit.NewRedis(client, cfg.RedisPrefix+"rl:", p), memory(p), cfg.RateLimitOnStoreError, breaker)
		l.Timeout = cfg.RedisTimeout
		return l
	}
	backoff = func(th *auth.LoginThrottle) auth.Backoff {
		b := auth.NewRedisBackoff(client, cfg.RedisPrefix+"login:", th, cfg.RateLimitOnStoreError, breaker)
		b.Timeout = cfg.RedisTimeout
		return b
	}
	return limiters, backoff, nil
}

// The stream plane: a slot's lease outlives a few missed heartbeats, and the
// events stream keeps the newest for replays.
const (
	streamLeaseBeats   = 4 // 60 s by default
	streamKeep         = 10000
	memoryKeep         = 1024
	streamBuffer       = 64
	clusterEventShards = 6 // two for each master of the smallest cluster (BENCHMARKS.md)
)

// streamConfig is the stream plane of cfg: in memory, or in Redis, whose hub
// must run for other replicas' events.
func streamConfig(ctx context.Context, cfg Config, client rueidis.Client, logger *slog.Logger) (sc streams.Config, run func(context.Context), err error) {
	sc = memoryStreams(cfg)
	sc.Hub = streams.NewMemoryHub(memoryKeep, streamBuffer)
	if client == nil {
		return sc, func(context.Context) {}, nil
	}
	prefix := cfg.RedisPrefix + "st:"
	redisCap := func(max int, what string) *streams.RedisCap {
		c := streams.NewRedisCap(client, prefix, max, streamLeaseBeats*cfg.Streams.Heartbeat, streams.NewMemoryCap(max))
		c.OnError = func(err error) { logger.Warn(what+": Redis failed; counting on this replica", "error", err) }
		c.Timeout = cfg.RedisTimeout
		return c
	}
	shards := cfg.RedisEventShards
	if shards == 0 {
		shards = 1
		if client.Mode() == rueidis.ClientModeCluster && !streams.HasHashTag(prefix) { // a tag keeps every key in one slot
			shards = clusterEventShards
		}
	}
	// up to 9 shards share streamKeep; past that, each keeps memoryKeep
	hub := streams.NewShardedRedisHub(client, prefix, shards, max(streamKeep/shards, memoryKeep), streamBuffer)
	if err := hub.Claim(ctx); err != nil {
		return sc, nil, err
	}
	hub.OnError = func(err error) { logger.Warn("stream events: Redis failed; retrying", "error", err) }
	sc.Cap, sc.UserCap, sc.Hub = redisCap(cfg.StreamCap, "stream cap"), redisCap(cfg.StreamUserCap, "stream cap per user"), hub
	return sc, func(ctx context.Context) { _ = hub.Run(ctx) }, nil
}

// listen opens the server's listeners; tests refuse brain's default ports.
var listen = net.Listen

// listenOn binds addr, the setting env; an error begins with prefix.
func listenOn(addr, prefix, env, orOff string) (net.Listener, error) {
	ln, err := listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s%s is in use (another "+product.Name+"?); set %s to another host:port%s",
			prefix, addr, env, orOff)
	}
	if err != nil {
		return nil, fmt.Errorf("%slisten (%s): %w", prefix, env, err)
	}
	return ln, nil
}

// serveMetrics serves /metrics on ln until stop.
func serveMetrics(ln net.Listener, m *api.Metrics, logger *slog.Logger) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout}
	go srv.Serve(ln)
	logger.Info("metrics listening", "addr", ln.Addr().String())
	return func() { srv.Close() }
}

// readHeaderTimeout bounds the headers; a trickling body is cut by the
// connection caps' minimum rate.
const readHeaderTimeout = 5 * time.Second

// maxConns is BRAIN_MAX_CONNS, or what the descriptor limit allows; and that limit.
func maxConns(cfg Config) (n, limit int, err error) {
	limit, _ = connlimit.DescriptorLimit()
	if cfg.MaxConns > 0 {
		return cfg.MaxConns, limit, nil
	}
	if n = connlimit.Auto(limit); n < 1 {
		return 0, limit, fmt.Errorf("the descriptor limit (RLIMIT_NOFILE) is %d, and "+product.Name+" keeps %d for its own files: none is left for connections ("+product.EnvPrefix+"MAX_CONNS=auto); raise it (ulimit -n)", limit, connlimit.Reserve(limit))
	}
	return n, limit, nil
}

// connRefusal is the 503 envelope of a connection the caps refuse.
func connRefusal(msg string) []byte {
	e := api.NewError(http.StatusServiceUnavailable, msg)
	e.GetHeaders().Set("Retry-After", "1")
	return api.ErrorResponse(e)
}

// serve runs the server until ctx is done, then shuts it down gracefully.
func serve(ctx context.Context, cfg Config, logger *slog.Logger) error {
	// settings checked and ports bound before anything is opened or created
	if _, err := newServer(cfg, slog.New(slog.DiscardHandler), running{}); err != nil {
		return err
	}
	maxConns, fileLimit, err := maxConns(cfg)
	if err != nil {
		return err
	}
	ln, err := listenOn(cfg.Addr, "", product.EnvPrefix+"ADDR", "")
	if err != nil {
		return err
	}
	defer ln.Close() // on an early return; serving closes it itself
	var metricsLn net.Listener
	var metrics *api.Metrics // nil with BRAIN_METRICS_ADDR=off: nothing is recorded
	if cfg.MetricsAddr != "off" {
		if metricsLn, err = listenOn(cfg.MetricsAddr, "metrics: ", product.EnvPrefix+"METRICS_ADDR", ", or off"); err != nil {
			return err
		}
		defer metricsLn.Close()
		metrics = api.NewMetrics()
	}
	var ready []api.Check
	redis, err := openRedis(cfg) // the state replicas share, else kept in memory
	if err != nil {
		return err
	}
	if redis != nil {
		defer redis.Close()
		ready = append(ready, api.Check{Name: "redis", Check: func(ctx context.Context) error {
			return redis.Do(ctx, redis.B().Ping().Build()).Error()
		}})
	}
	limiters, backoff, err := rateLimitStore(cfg, redis, logger, metrics)
	if err != nil {
		return err
	}
	sc, runHub, err := streamConfig(ctx, cfg, redis, logger)
	if err != nil {
		return err
	}
	db, applied, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	logger.Info("database ready", "dialect", db.Dialect, "database", databaseName(cfg), "schema", store.SchemaVersions(db.Dialect, migrationSets(cfg.modules)...), "migrations_applied", applied)
	svc := auth.NewService(store.NewAuthStore(db), cfg.Auth)
	svc.Backoff = backoff(svc.Throttle)
	if err := ensureAdmin(ctx, svc, cfg.AdminPassword, logger); err != nil {
		return err
	}
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer runBeside(stopBG, func() { // stopping flushes API-key last-use times
		svc.Run(bg, 30*time.Second, func(err error) { logger.Warn("auth maintenance failed; retrying in 30s", "error", err) })
	})()

	dbCheck := api.Check{Name: "database", Check: func(ctx context.Context) error { return db.PingContext(ctx) }}
	ready = append([]api.Check{dbCheck}, ready...)
	defer runBeside(stopBG, func() { runHub(bg) })()
	run := running{db: db, auth: svc, limiters: limiters, metrics: metrics, ready: ready, streams: streams.New(sc)}
	// modules start in order and stop in reverse, before the hub and database
	for _, m := range cfg.modules {
		ops, stop, err := m.Start(api.WithLogger(bg, logger), db, sc.Hub, logger)
		if err != nil {
			return err
		}
		defer stop()
		run.modules = append(run.modules, ops)
	}
	if metricsLn != nil {
		defer serveMetrics(metricsLn, metrics, logger)()
	}

	handler, err := newServer(cfg, logger, run)
	if err != nil {
		return err
	}
	conns := connlimit.New(connlimit.Config{
		Max: maxConns, MaxPerIP: cfg.MaxConnsPerIP, Exempt: cfg.TrustedProxies,
		MinRate: cfg.MinReceiveRate, Grace: readHeaderTimeout,
		TooMany:       connRefusal(product.Name + " has too many connections open; retry in a second"),
		TooManyFromIP: connRefusal("too many connections from your address; retry in a second"),
		Logger:        logger,
	})
	metrics.ObserveConns(conns)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: readHeaderTimeout, WriteTimeout: 60 * time.Second,
		IdleTimeout: 120 * time.Second, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	logger.Info("connection caps", "max_conns", maxConns, "max_conns_per_ip", cfg.MaxConnsPerIP, "min_receive_rate", settings.FormatSize(cfg.MinReceiveRate)+"/s", "descriptor_limit", fileLimit)
	if p, ok := broadPrefix(cfg.TrustedProxies); ok { // only with TrustEveryPeer: parseConfig refuses it otherwise
		logger.Warn(trustedProxiesEnv+" trusts every address, or a large part of them: every such peer's X-Forwarded-For is believed, and no peer is held to "+product.EnvPrefix+"MAX_CONNS_PER_IP; safe only if every connection passes through a proxy that sets X-Forwarded-For",
			"prefix", p.String(), "setting", trustEveryPeerEnv)
	}
	addr := ln.Addr().String()
	logger.Info(product.Name+" listening", "addr", addr, "docs", "http://"+addr+"/docs", "dashboard", "http://"+addr+"/")
	if site, _ := dashboard(); site != nil && !site.Built() {
		logger.Info("the dashboard is not built: / says so; make web builds it (make run builds it and runs the server)")
	}
	return serveUntilDone(ctx, srv, func() error { return conns.Serve(srv, ln) }, cfg.ShutdownTimeout, logger, run.streams.CloseStreams)
}

// ensureAdmin creates the first admin on first start, with password or a
// random one it logs once.
func ensureAdmin(ctx context.Context, svc *auth.Service, password string, logger *slog.Logger) error {
	created, generated, err := svc.EnsureAdmin(ctx, password)
	switch {
	case err != nil:
		return fmt.Errorf("create the admin user: %w", err)
	case created && generated != "":
		logger.Warn("created user admin with a random password, shown only now; change it with POST /api/v1/auth/password", "username", "admin", "password", generated)
	case created:
		logger.Info("created user admin with " + product.EnvPrefix + "ADMIN_PASSWORD")
	case password != "":
		logger.Warn(product.EnvPrefix + "ADMIN_PASSWORD ignored: users exist already, and it only sets the first admin's password; change a password with `" + product.Name + " user passwd --username NAME`")
	}
	return nil
}

// runBeside runs run in a goroutine; stopAndWait calls stop and waits for it.
func runBeside(stop func(), run func()) (stopAndWait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		run()
	}()
	return func() { stop(); <-done }
}

// serveUntilDone serves until ctx is done, then drains in-flight requests for
// up to drain while closing the streams; a signal's shutdown returns nil.
func serveUntilDone(ctx context.Context, srv *http.Server, serve func() error, drain time.Duration, logger *slog.Logger, closeStreams func(context.Context) error) error {
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "drain", drain)
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	streamsClosed := make(chan error, 1)
	go func() { streamsClosed <- closeStreams(sctx) }()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("drain timed out; closing the remaining connections", "error", err)
		srv.Close()
	}
	if err := <-streamsClosed; err != nil {
		logger.Warn("streams still open after the drain; they end with the process", "error", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped")
	return nil
}
