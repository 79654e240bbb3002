package loadtool

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log"
	"net/url"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the driver that creates and drops the database
)

// CreateDatabase creates a database of its own on the PostgreSQL server
// of adminURL, named after the tool, and returns its URL, its name and a
// function that drops it.
func CreateDatabase(tool, adminURL string) (dbURL, name string, drop func(), err error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", "", nil, fmt.Errorf("%s: -database-url %q is not a postgres:// URL", tool, adminURL)
	}
	admin, err := sql.Open("pgx", adminURL)
	if err != nil {
		return "", "", nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name = tool + "_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		return "", "", nil, fmt.Errorf("%s: create database %s on %s: %w", tool, name, u.Redacted(), err)
	}
	u.Path = "/" + name
	drop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			log.Printf("%s: drop database %s: %v; drop it by hand", tool, name, err)
		}
		admin.Close()
	}
	return u.String(), name, drop, nil
}
