package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-template/brain/auth"
)

// A session or API key deleted in the store by another replica, not
// through this Service, is refused here once the documented bound has
// passed (10 s: CacheTTL's default), and from then on it is a credential
// this replica does not know: its cache entry is dropped, so the store is
// asked again at most once per CacheTTL, never under WithoutLookup (the
// credential is no longer one this replica has seen valid), and no write
// this replica queued for it is left for Flush.
func TestCredentialDeletedElsewhere(t *testing.T) {
	type credential struct {
		authenticate  func(ctx context.Context) error
		lookups       func() int32
		deleteInStore func()
	}
	for _, kind := range []struct {
		name string
		make func(t *testing.T, svc *auth.Service, st *countingStore) credential
	}{
		{"session", func(t *testing.T, svc *auth.Service, st *countingStore) credential {
			token, se, _, err := svc.Login(context.Background(), "ada", "correct horse battery", "ip")
			if err != nil {
				t.Fatal(err)
			}
			return credential{
				authenticate:  func(ctx context.Context) error { _, err := svc.Authenticate(ctx, token); return err },
				lookups:       st.sessionLookups.Load,
				deleteInStore: func() { mustDo(t, st.Store.DeleteSession(context.Background(), se.TokenHash)) },
			}
		}},
		{"API key", func(t *testing.T, svc *auth.Service, st *countingStore) credential {
			ctx := context.Background()
			u, err := st.UserByUsername(ctx, "ada")
			if err != nil {
				t.Fatal(err)
			}
			k, key, err := svc.CreateAPIKey(ctx, u.ID, "ci")
			if err != nil {
				t.Fatal(err)
			}
			return credential{
				authenticate:  func(ctx context.Context) error { _, err := svc.AuthenticateKey(ctx, key); return err },
				lookups:       st.keyLookups.Load,
				deleteInStore: func() { mustDo(t, st.Store.DeleteAPIKey(context.Background(), u.ID, k.ID)) },
			}
		}},
	} {
		t.Run(kind.name, func(t *testing.T) {
			svc, st, clk := mustService(t)
			ctx, nl := context.Background(), auth.WithoutLookup(context.Background())
			c := kind.make(t, svc, st)
			if err := c.authenticate(ctx); err != nil { // cached now, a use queued for Flush
				t.Fatal(err)
			}
			c.deleteInStore()

			clk.Advance(10 * time.Second) // the bound the docs give every replica
			if err := c.authenticate(ctx); err != auth.ErrUnauthenticated {
				t.Fatalf("10 s after it was deleted in the store: %v, want ErrUnauthenticated", err)
			}
			n := c.lookups()
			for range 5 {
				if err := c.authenticate(ctx); err != auth.ErrUnauthenticated {
					t.Fatalf("again: %v, want ErrUnauthenticated", err)
				}
			}
			if err := c.authenticate(nl); err != auth.ErrUnauthenticated {
				t.Fatalf("again without lookup: %v, want ErrUnauthenticated", err)
			}
			if got := c.lookups() - n; got != 0 {
				t.Fatalf("6 more tries within CacheTTL asked the store %d times, want 0: the store said it is gone", got)
			}
			if err := svc.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if k, s := st.keyTouches.Load(), st.touches.Load(); k != 0 || s != 0 {
				t.Fatalf("Flush wrote %d keys' last use and %d sessions' last-seen time, of a credential the store said is gone", k, s)
			}

			clk.Advance(svc.Config().CacheTTL) // the store's word is stale too
			if err := c.authenticate(nl); !errors.Is(err, auth.ErrNotCached) {
				t.Fatalf("without lookup, once the store's word is stale: %v, want ErrNotCached", err)
			}
			if got := c.lookups() - n; got != 0 {
				t.Fatalf("asked the store %d times under WithoutLookup", got)
			}
			if err := c.authenticate(ctx); err != auth.ErrUnauthenticated || c.lookups()-n != 1 {
				t.Fatalf("with lookup, once the store's word is stale: %v after %d lookups, want ErrUnauthenticated after 1", err, c.lookups()-n)
			}
		})
	}
}

// mustDo fails the test on err.
func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
