// This file is brain's modules: the features that bring more than
// operations. Each is wired in by a file of its own in cmd/brain, which
// registers it (see wire), so adding or removing one edits no file of
// the platform.
package main

import (
	"context"
	"log/slog"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
)

// A module is a feature with more than operations: settings of its own,
// tables of its own, work it runs beside the server (a job queue, a
// sweep). Wired in once (wire), it is wired in everywhere, always after
// the platform: parseConfig reads its settings after the platform's,
// openStore applies its migrations after the platform's, serve starts it
// once the platform's parts run and stops it before they stop, and
// newServer serves its operations after the account operations. A
// feature with operations only (auth/account) is a line in newServer's
// Features instead.
//
// A package satisfies it with exported methods, and never imports
// cmd/brain.
type module interface {
	// Settings is the module's settings table, whose rows read into the
	// module itself.
	Settings() settings.Table
	// Migrations is the module's migration set (store.Migrations).
	Migrations() store.Migrations
	// Start runs the module's work on db, as its settings say, with
	// events published on hub, and returns its operations and stop,
	// which ends that work; serve calls stop before hub and db close.
	// With db nil (brain openapi, and serve's check of the settings
	// before it opens anything) nothing runs: the operations are those
	// to document, stated as the settings say, and stop does nothing.
	Start(ctx context.Context, db *store.DB, hub streams.Hub, logger *slog.Logger) (ops api.Feature, stop func(), err error)
}

// wired are the constructors of brain's modules, in the order wire
// was called: that of their files' names, as Go runs init functions.
var wired []func() module

// wire adds a module to the binary. A module's whole wiring is one file
// of cmd/brain that calls it from init, so that deleting the file (with
// the module's package) removes the module, and adding one edits no
// other file:
//
//	func init() { wire(func() module { return bookmarks.NewModule() }) }
func wire(newModule func() module) { wired = append(wired, newModule) }

// modules are brain's modules, made anew for each configuration read
// (newConfig), in the order they are wired in.
func modules() []module {
	ms := make([]module, len(wired))
	for i, newModule := range wired {
		ms[i] = newModule()
	}
	return ms
}

// migrationSets are the migration sets of ms, in order: what
// store.DB.Migrate applies after the platform's.
func migrationSets(ms []module) []store.Migrations {
	sets := make([]store.Migrations, len(ms))
	for i, m := range ms {
		sets[i] = m.Migrations()
	}
	return sets
}

// moduleFeatures are the operations of cfg's modules, in order: those of
// the modules serve started (r.modules), or, in a brain that runs
// nothing (no database: brain openapi, serve's first check), those each
// module documents.
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
