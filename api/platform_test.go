package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/streams"
)

// streamServerWith serves the whole platform over real HTTP — api with
// the stream plane (package streams), as every brain serves it, its
// heartbeat short — on cfg, with budgets no test meets unless it sets its
// own, and the user ada. srv lets a test set the server's timeouts.
func streamServerWith(tb testing.TB, cfg api.Config, srv func(*httptest.Server)) (*api.Server, *apitest.Client, *auth.Service) {
	tb.Helper()
	if cfg.Auth == nil {
		cfg.Auth = MustAuth(tb)
	}
	plane := streams.New(streams.Config{Heartbeat: 50 * time.Millisecond})
	cfg.Features = append(slices.Clone(cfg.Features), plane.Feature) // mustRawServer puts the account operations first
	for _, b := range []*ratelimit.Rate{&cfg.Limits.Session, &cfg.Limits.APIKey, &cfg.Limits.StreamOpens} {
		if *b == (ratelimit.Rate{}) {
			*b = ratelimit.Rate{Limit: 10_000, Window: time.Minute, Burst: 10_000}
		}
	}
	s, _ := mustRawServer(tb, cfg)
	hs := httptest.NewUnstartedServer(s)
	if srv != nil {
		srv(hs)
	}
	hs.Start()
	tr := &http.Transport{MaxIdleConnsPerHost: 512}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := plane.CloseStreams(ctx); err != nil {
			tb.Errorf("streams still open 10 s after CloseStreams: %v", err)
		}
		hs.Close()
	})
	tb.Cleanup(tr.CloseIdleConnections)
	return s, apitest.NewClient(tb, hs.URL, &http.Client{Transport: tr}), cfg.Auth
}
