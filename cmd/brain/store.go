package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/brain-template/brain/store"
)

// openStore opens the configured database and migrates it.
func openStore(ctx context.Context, cfg Config) (*store.DB, int, error) {
	db, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return nil, 0, err
	}
	db.Timeout = cfg.StoreTimeout
	applied, err := db.Migrate(ctx, migrationSets(cfg.modules)...)
	if err != nil {
		db.Close()
		return nil, 0, err
	}
	return db, applied, nil
}

// databaseName names cfg's database for the log, with no user or password.
func databaseName(cfg Config) string {
	if cfg.DatabaseURL == "" {
		path := store.SQLitePath(cfg.DataDir)
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		return path
	}
	u, err := url.Parse(cfg.DatabaseURL)
	if err != nil {
		return "?" // parseConfig has checked the URL already
	}
	host, db := u.Host, strings.TrimPrefix(u.Path, "/")
	if host == "" { // postgres:///db?host=/run/postgresql
		host = u.Query().Get("host")
	}
	if db == "" {
		db = u.Query().Get("dbname")
	}
	return host + "/" + db
}

func migrate(ctx context.Context, cfg Config, stdout io.Writer) error {
	db, applied, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(stdout, "%s %s: schema at versions %s (%d migration(s) applied now)\n", db.Dialect, databaseName(cfg), store.SchemaVersions(db.Dialect, migrationSets(cfg.modules)...), applied)
	return nil
}
