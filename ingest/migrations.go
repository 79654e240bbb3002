// The memory example's schema: its migration set, applied after the
// platform's by store.DB.Migrate.
package ingest

import (
	"context"
	"database/sql"
	"embed"

	"github.com/brain-template/brain/store"
)

//go:embed migrations
var migrationFiles embed.FS

// Migrations is the example's migration set, "ingest": its tables on
// both dialects (migrations/sqlite and migrations/postgres), and the Go
// step of 0003_search, which indexes the items stored before it. The
// binary gives it to store.DB.Migrate.
var Migrations = store.Migrations{
	Name: "ingest",
	FS:   store.SubFS(migrationFiles, "migrations"),
	Steps: map[string]func(ctx context.Context, tx *sql.Tx, d store.Dialect) error{
		"search": reindexItems,
	},
}
