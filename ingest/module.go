// This file is the memory example as cmd/brain runs it, a module: its
// settings, its migration set, and the service, job queue and sweep it
// runs beside the server, behind the one line of cmd/brain that lists it.
package ingest

import (
	"context"
	"log/slog"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
)

// Module is the memory example whole, as a binary runs it: the settings
// read into it, its migration set, and Start, which runs it beside the
// server and gives its operations. A binary makes one for each
// configuration it reads, so two configurations never share a setting.
type Module struct {
	settings moduleSettings
}

// NewModule returns the memory example with its settings not read yet:
// each at its default until the rows of [Module.Settings] are set.
func NewModule() *Module { return &Module{} }

// Settings is the example's settings table, whose rows read into m:
// MEM_IDEMPOTENCY_TTL_SECS, BRAIN_MAX_ITEMS, BRAIN_MAX_QUEUED_JOBS,
// BRAIN_JOB_WORKERS, BRAIN_JOB_TIMEOUT and the MEM_RATE_LIMIT_* rates of
// the memory budgets.
func (m *Module) Settings() settings.Table { return settingsTable(&m.settings) }

// Migrations is the example's migration set, [Migrations].
func (m *Module) Migrations() store.Migrations { return Migrations }

// Start runs the example's service, job workers and hourly sweep on db,
// publishing on hub, and returns its operations and stop, to call before
// hub and db close. With db nil nothing runs: the operations only document
// the API.
func (m *Module) Start(ctx context.Context, db *store.DB, hub streams.Hub, logger *slog.Logger) (ops api.Feature, stop func(), err error) {
	if db == nil {
		s := m.settings
		return Feature(NewService(nil, Config{TTL: s.TTL, MaxItems: s.MaxItems, MaxQueuedJobs: s.MaxQueuedJobs, Rates: s.Rates})), func() {}, nil
	}
	svc, stop, err := start(ctx, db, m.settings, hub, logger)
	if err != nil {
		return nil, nil, err
	}
	return Feature(svc), stop, nil
}
