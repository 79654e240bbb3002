package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/auth"
)

// Made-up credentials cost one store lookup per CacheTTL, not one per
// request, and a new key is never refused for having been guessed.
func TestUnknownCredentialsAreCached(t *testing.T) {
	svc, st, clk := mustService(t)
	ctx := context.Background()
	key := "brk_" + strings.Repeat("x", 32)
	token := strings.Repeat("t", 43)
	for range 5 {
		if _, err := svc.AuthenticateKey(ctx, key); err != auth.ErrUnauthenticated {
			t.Fatalf("AuthenticateKey(made up) = %v", err)
		}
		if _, err := svc.Authenticate(ctx, token); err != auth.ErrUnauthenticated {
			t.Fatalf("Authenticate(made up) = %v", err)
		}
	}
	if k, s := st.keyLookups.Load(), st.sessionLookups.Load(); k != 1 || s != 1 {
		t.Fatalf("%d key and %d session lookups for 5 tries each, want 1 each", k, s)
	}
	clk.Advance(svc.Config().CacheTTL)
	if _, err := svc.AuthenticateKey(ctx, key); err != auth.ErrUnauthenticated {
		t.Fatal(err)
	}
	if k := st.keyLookups.Load(); k != 2 {
		t.Fatalf("%d key lookups: after CacheTTL the store is asked again", k)
	}
}

// Under WithoutLookup only the caches answer: a cached caller passes, an
// uncached one gets ErrNotCached and the store is not asked.
func TestWithoutLookup(t *testing.T) {
	svc, st, clk := mustService(t)
	ctx := context.Background()
	token, _, u, err := svc.Login(ctx, "ada", "correct horse battery", "ip")
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := svc.CreateAPIKey(ctx, u.ID, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AuthenticateKey(ctx, key); err != nil { // cached now
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, token); err != nil {
		t.Fatal(err)
	}
	keys, sessions := st.keyLookups.Load(), st.sessionLookups.Load()
	nl := auth.WithoutLookup(ctx)
	if id, err := svc.AuthenticateKey(nl, key); err != nil || id.User.ID != u.ID {
		t.Fatalf("cached key without lookup: %v %v", id, err)
	}
	if id, err := svc.Authenticate(nl, token); err != nil || id.User.ID != u.ID {
		t.Fatalf("cached session without lookup: %v %v", id, err)
	}
	if _, err := svc.AuthenticateKey(nl, "brk_"+strings.Repeat("y", 32)); !errors.Is(err, auth.ErrNotCached) {
		t.Fatalf("uncached key without lookup = %v, want ErrNotCached", err)
	}
	clk.Advance(svc.Config().CacheTTL + time.Second) // the cache entries are stale
	if _, err := svc.Authenticate(nl, token); !errors.Is(err, auth.ErrNotCached) {
		t.Fatalf("stale session without lookup = %v, want ErrNotCached", err)
	}
	if k, s := st.keyLookups.Load(), st.sessionLookups.Load(); k != keys || s != sessions {
		t.Fatalf("the store was asked under WithoutLookup (%d→%d keys, %d→%d sessions)", keys, k, sessions, s)
	}
}
