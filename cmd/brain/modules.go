package main

import (
	"context"
	"log/slog"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
)

// A module is a feature with settings, tables and work beside the server (a job
// queue); a feature with operations only is a line in newServer.
type module interface {
	Settings() settings.Table
	Migrations() store.Migrations
	// Start runs the module's work on db, publishing on hub, and returns its
	// operations and stop. With db nil (brain openapi) nothing runs.
	Start(ctx context.Context, db *store.DB, hub streams.Hub, logger *slog.Logger) (ops api.Feature, stop func(), err error)
}

var wired []func() module

// wire adds a module from the init of a file of its own, which deleting removes:
//
//	func init() { wire(func() module { return bookmarks.NewModule() }) }
func wire(newModule func() module) { wired = append(wired, newModule) }

func modules() []module {
	ms := make([]module, len(wired))
	for i, newModule := range wired {
		ms[i] = newModule()
	}
	return ms
}

func migrationSets(ms []module) []store.Migrations {
	sets := make([]store.Migrations, len(ms))
	for i, m := range ms {
		sets[i] = m.Migrations()
	}
	return sets
}

// moduleFeatures are the operations serve started, or without a database
// those each module documents.
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
