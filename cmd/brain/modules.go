package main

import (
	"context"
	"log/slog"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
)

// A module is a feature with more than operations: settings, tables, and
// work it runs beside the server (a job queue, a sweep). Wired in once
// (wire), its settings, migrations, work and operations each come after
// the platform's. A feature with operations only is a line in newServer.
type module interface {
	// Settings is the module's settings table, read into the module.
	Settings() settings.Table
	// Migrations is the module's migration set (store.Migrations).
	Migrations() store.Migrations
	// Start runs the module's work on db, publishing on hub, and returns
	// its operations and stop, called before hub and db close. With db
	// nil (brain openapi) nothing runs: the operations are to document.
	Start(ctx context.Context, db *store.DB, hub streams.Hub, logger *slog.Logger) (ops api.Feature, stop func(), err error)
}

// wired are the constructors of brain's modules, in their files' order.
var wired []func() module

// wire adds a module to the binary, from the init of a file of its own, so
// that deleting the file removes the module:
//
//	func init() { wire(func() module { return bookmarks.NewModule() }) }
func wire(newModule func() module) { wired = append(wired, newModule) }

// modules are brain's modules, made anew for each configuration.
func modules() []module {
	ms := make([]module, len(wired))
	for i, newModule := range wired {
		ms[i] = newModule()
	}
	return ms
}

// migrationSets are the migration sets of ms, in order.
func migrationSets(ms []module) []store.Migrations {
	sets := make([]store.Migrations, len(ms))
	for i, m := range ms {
		sets[i] = m.Migrations()
	}
	return sets
}

// moduleFeatures are the operations of cfg's modules: those serve
// started, or without a database those each module documents.
func moduleFeatures(cfg Config, r running, logger *slog.Logger) ([]api.Feature, error) {
	if r.db != nil {
		return r.modules, nil
	}
	ops := make([]api.Feature, len(cfg.modules))
	for i, m := range cfg.modules {
		op, _, err := m.Start(context.Background(), nil, nil, logger)
		if err != nil {
			return nil, err
		}
		ops[i] = op
	}
	return ops, nil
}
