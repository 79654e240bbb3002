package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

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
		HashConcurrency: cfg.HashConcurrency,
		HashWait:        cfg.HashWait,
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

func addUser(ctx context.Context, cfg Config, username string, stdin io.Reader, stdout io.Writer) error {
	if username == "" {
		return errors.New("user add needs --username")
	}
	if stdin == nil {
		return errors.New("user add reads the password from stdin")
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read password: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	db, _, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	u, err := newAuth(db, cfg).AddUser(ctx, username, password)
	if errors.Is(err, auth.ErrConflict) {
		return fmt.Errorf("a user named %q exists already", auth.NormalizeUsername(username))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created user %s (id %s)\n", u.Username, u.ID)
	return nil
}
