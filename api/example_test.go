// A runnable example of what a feature declares on its operation: a
// budget of its own, which the spec's x-rate-limit shows and the server
// enforces.

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/store"
	"github.com/danielgtaylor/huma/v2"
)

// An operation declares its budget where it is registered: API keys that
// call it draw from "exports" (two a minute here) instead of their
// default budget, while sessions keep theirs. The same declaration makes
// the spec's x-rate-limit and the enforcement, so the third call in a
// minute is refused with 429, and Retry-After says when to come back. The
// server's clock is fixed, so the example never waits.
func ExampleWithBudget() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "brain-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := store.OpenSQLite(ctx, filepath.Join(dir, "brain.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		panic(err)
	}
	fastHash := auth.Argon2Params{Memory: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16} // an example's, not a server's
	svc := auth.NewService(store.NewAuthStore(db), auth.Config{Argon2: fastHash})
	ada, _ := svc.AddUser(ctx, "ada", "correct horse battery")
	_, key, _ := svc.CreateAPIKey(ctx, ada.ID, "example")

	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := api.New(api.Config{Auth: svc, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})

	// The feature's operation and its budget.
	exportBudget := api.Budget{Name: "exports", Default: "2/min"}
	type exportOutput struct {
		Body struct {
			URL string `json:"url" maxLength:"256"`
		}
	}
	huma.Register(api.WithAccess(s.API, api.Caller), api.WithBudget(huma.Operation{
		OperationID: "create-export", Method: http.MethodPost, Path: api.Prefix + "/exports",
		Summary: "Export your data", Description: "Starts an export and returns where it will be.",
	}, exportBudget), func(context.Context, *struct{}) (*exportOutput, error) {
		out := &exportOutput{}
		out.Body.URL = "/exports/1"
		return out, nil
	})
	if err := s.Err(); err != nil { // a bad budget is reported here, never a panic
		panic(err)
	}

	// What the spec says.
	spec, _ := s.Spec()
	var doc struct {
		Paths map[string]map[string]struct {
			RateLimit []json.RawMessage `json:"x-rate-limit"`
		}
	}
	_ = json.Unmarshal(spec, &doc)
	for _, e := range doc.Paths[api.Prefix+"/exports"]["post"].RateLimit {
		var line bytes.Buffer
		_ = json.Compact(&line, e)
		fmt.Println("x-rate-limit:", line.String())
	}

	// What the server does.
	for range 3 {
		req := httptest.NewRequest(http.MethodPost, api.Prefix+"/exports", nil)
		req.Header.Set("X-API-Key", key)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		fmt.Printf("%d RateLimit: %s Retry-After: %q\n", w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"))
		if w.Code == http.StatusTooManyRequests {
			var env struct {
				Code    string          `json:"code"`
				Details json.RawMessage `json:"details"`
			}
			_ = json.Unmarshal(w.Body.Bytes(), &env)
			fmt.Println(env.Code, string(env.Details))
		}
	}
	// Output:
	// x-rate-limit: {"plane":"session","policy":"session","limit":120,"window_s":60,"burst":60}
	// x-rate-limit: {"plane":"apikey","policy":"exports","limit":2,"window_s":60,"burst":2}
	// x-rate-limit: {"plane":"ip","policy":"ip","limit":30,"window_s":60,"burst":30,"applies_to":"unauthenticated"}
	// 200 RateLimit: "exports";r=1;t=30 Retry-After: ""
	// 200 RateLimit: "exports";r=0;t=60 Retry-After: ""
	// 429 RateLimit: "exports";r=0;t=60 Retry-After: "30"
	// rate-limited {"scope":"apikey","policy":"exports","limit":2,"window_s":60,"retry_after_s":30}
}
