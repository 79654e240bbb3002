package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/brain-template/brain/internal/product"
)

//go:embed migrations
var platformFiles embed.FS

// PlatformSet names the platform's migration set, applied first.
const PlatformSet = "platform"

var platform = Migrations{Name: PlatformSet, FS: SubFS(platformFiles, "migrations")}

// Migrations is one migration set, a feature's schema, numbered on its own.
type Migrations struct {
	Name string // in schema_migrations; it never changes
	// FS holds sqlite/ and postgres/, each with NNNN_name.sql numbered 1, 2, 3…
	FS fs.FS
	// Steps, by migration name, run after its SQL in its transaction.
	Steps map[string]func(ctx context.Context, tx *sql.Tx, d Dialect) error
}

// SubFS is fs.Sub for a directory that is there: it panics otherwise.
func SubFS(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic("store: SubFS: " + err.Error())
	}
	return sub
}

type migration struct {
	version int
	name    string
	sql     string
	step    func(ctx context.Context, tx *sql.Tx, d Dialect) error
}

type loadedSet struct {
	name string
	ms   []migration
}

func (s Migrations) load(d Dialect) (loadedSet, error) {
	if s.Name == "" || s.FS == nil {
		return loadedSet{}, fmt.Errorf("store: a migration set needs a Name and an FS")
	}
	entries, err := fs.ReadDir(s.FS, string(d))
	if err != nil {
		return loadedSet{}, fmt.Errorf("store: migrations of %s: %w", s.Name, err)
	}
	var out []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return loadedSet{}, fmt.Errorf("store: migration %s/%s: want NNNN_name.sql", s.Name, e.Name())
		}
		b, err := fs.ReadFile(s.FS, string(d)+"/"+e.Name())
		if err != nil {
			return loadedSet{}, err
		}
		out = append(out, migration{version: v, name: name, sql: string(b), step: s.Steps[name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return loadedSet{}, fmt.Errorf("store: migrations of %s on %s must be numbered 1, 2, 3...: found %d at place %d", s.Name, d, m.version, i+1)
		}
	}
	for name := range s.Steps {
		if !slices.ContainsFunc(out, func(m migration) bool { return m.name == name }) {
			return loadedSet{}, fmt.Errorf("store: migrations of %s on %s: a step for %s, which is no migration", s.Name, d, name)
		}
	}
	return loadedSet{name: s.Name, ms: out}, nil
}

func loadSets(d Dialect, features []Migrations) ([]loadedSet, error) {
	all := append([]Migrations{platform}, features...)
	out := make([]loadedSet, 0, len(all))
	for _, s := range all {
		if slices.ContainsFunc(out, func(l loadedSet) bool { return l.name == s.Name }) {
			return nil, fmt.Errorf("store: two migration sets named %q", s.Name)
		}
		l, err := s.load(d)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// SchemaVersions says the newest migration of each set: "platform 1, bookmarks 2".
func SchemaVersions(d Dialect, features ...Migrations) string {
	sets, err := loadSets(d, features)
	if err != nil {
		return "?"
	}
	parts := make([]string, len(sets))
	for i, s := range sets {
		parts[i] = fmt.Sprintf("%s %d", s.name, len(s.ms))
	}
	return strings.Join(parts, ", ")
}

// ErrSchemaTooNew means a set in the database was migrated by a newer brain.
type ErrSchemaTooNew struct {
	Set              string // the set's name
	Database, Binary int    // the set's newest version in each
}

// Error says which versions differ and what to do.
func (e *ErrSchemaTooNew) Error() string {
	return fmt.Sprintf("store: the database schema of %s is at version %d but this "+product.Name+" knows only up to %d: run a "+product.Name+" at least as new as the one that migrated it", e.Set, e.Database, e.Binary)
}
