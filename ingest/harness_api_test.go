// This file is what the example's API tests share, on api/apitest: a
// whole server with the memory example on a real port, and the names the
// tests give the harness's types.

package ingest_test

import (
	"context"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/streams"
)

type (
	live      = apitest.Server
	reply     = apitest.Reply
	envelope  = apitest.Envelope
	fakeClock = apitest.Clock
)

// memoryServer serves the whole API over real HTTP with an ingest service
// whose jobs the test processes itself (memory.Process), and returns ada's
// session cookie.
func memoryServer(t *testing.T) (*live, *ingest.Service, string) {
	l, memory, ada, _ := memoryServerAuth(t)
	return l, memory, ada
}

// memoryServerAuth is memoryServer that also returns the auth service.
func memoryServerAuth(t *testing.T) (*live, *ingest.Service, string, *auth.Service) {
	t.Helper()
	db := apitest.OpenDB(t)
	svc := apitest.NewAuth(t, db)
	hub := streams.NewMemoryHub(64, 64)
	memory := ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{Publish: ingest.Publisher(hub)})
	l := apitest.Start(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}}, apitest.Streams(streams.Config{Hub: hub}))
	return l, memory, l.Session(), svc
}

// loginAndKey returns a session cookie and an API key of ada's, made
// with the auth service: no request draws from a budget.
func loginAndKey(tb testing.TB, svc *auth.Service) (string, string) {
	tb.Helper()
	ctx := context.Background()
	token, _, u, err := svc.Login(ctx, apitest.User, apitest.Password, "setup")
	if err != nil {
		tb.Fatal(err)
	}
	_, key, err := svc.CreateAPIKey(ctx, u.ID, "test")
	if err != nil {
		tb.Fatal(err)
	}
	return "brain_session=" + token, key
}
