package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/store"
)

// Server timeouts. A slow client cannot hold a connection by trickling
// headers or a body, nor park idle connections for long. Streaming handlers
// outlive ReadTimeout and WriteTimeout by moving their own deadlines with
// http.ResponseController, message by message.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second // whole request, an 8 MiB ingest body included
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
)

// serve runs the server until ctx is done, then shuts it down gracefully.
func serve(ctx context.Context, cfg Config, logger *slog.Logger) error {
	db, applied, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	logger.Info("database ready", "dialect", db.Dialect, "schema", store.SchemaVersion(db.Dialect), "migrations_applied", applied)
	svc := newAuth(db, cfg)
	created, generated, err := svc.EnsureAdmin(ctx, cfg.AdminPassword)
	switch {
	case err != nil:
		return fmt.Errorf("create the admin user: %w", err)
	case created && generated != "":
		logger.Warn("created user admin with a random password, shown only now; change it with POST /api/v1/auth/password", "username", "admin", "password", generated)
	case created:
		logger.Info("created user admin with BRAIN_ADMIN_PASSWORD")
	}
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		svc.Run(bg, 30*time.Second, func(err error) { logger.Error("auth maintenance", "error", err) })
	}()
	defer func() { stopBG(); <-bgDone }() // flushes API-key last-use times

	srv := &http.Server{
		Handler: newServer(cfg, logger, svc, api.Check{Name: "database", Check: func(ctx context.Context) error {
			return db.PingContext(ctx)
		}}),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen (BRAIN_ADDR): %w", err)
	}
	addr := ln.Addr().String()
	logger.Info("brain listening", "addr", addr, "docs", "http://"+addr+"/docs")
	return serveUntilDone(ctx, srv, ln, cfg.ShutdownTimeout, logger)
}

// serveUntilDone serves on ln until ctx is done. Then it stops accepting,
// lets in-flight requests finish for up to drain, closes what is left, and
// returns nil: a shutdown asked for by a signal is a clean exit.
func serveUntilDone(ctx context.Context, srv *http.Server, ln net.Listener, drain time.Duration, logger *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "drain", drain)
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("drain timed out; closing the remaining connections", "error", err)
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped")
	return nil
}
