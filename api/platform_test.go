package api_test

import (
	"slices"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
)

// streamServer serves the whole platform over real HTTP, as apitest.Start
// does (the account operations, the stream plane with a short heartbeat,
// budgets no test meets unless it sets its own), with this package's
// test operations (testOperations), on cfg and the user ada.
func streamServer(tb testing.TB, cfg api.Config) (*api.Server, *apitest.Client, *auth.Service) {
	tb.Helper()
	if cfg.Auth == nil {
		cfg.Auth = MustAuth(tb)
	}
	cfg.Features = append(slices.Clone(cfg.Features), testOperations)
	s := apitest.Start(tb, cfg)
	return s.Server, s.Client, cfg.Auth
}
