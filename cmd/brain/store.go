package main

import (
	"context"
	"fmt"
	"io"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/store"
)

// openStore opens the configured database and migrates it.
func openStore(ctx context.Context, cfg Config) (*store.DB, int, error) {
	db, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return nil, 0, err
	}
	applied, err := db.Migrate(ctx)
	if err != nil {
		db.Close()
		return nil, 0, err
	}
	return db, applied, nil
}

func newAuth(db *store.DB, cfg Config) *auth.Service {
	return auth.NewService(store.NewAuthStore(db), auth.Config{
		SessionLifetime: cfg.SessionLifetime,
		IdleTimeout:     cfg.SessionIdleTimeout,
	})
}

func migrate(ctx context.Context, cfg Config, stdout io.Writer) error {
	db, applied, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(stdout, "%s schema at version %d (%d migration(s) applied now)\n", db.Dialect, store.SchemaVersion(db.Dialect), applied)
	return nil
}
