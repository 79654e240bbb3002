package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/ratelimit"
)

// An operation whose handler admits its requests itself declares its
// concurrency caps and the plane budgets it draws from: x-rate-limit lists
// the caps first, then the budgets, then the ip budget its 401s draw
// from; api charges no budget of its own for it. A budget that is not a
// plane's is a mistake Err reports.
func TestDeclarationCapsAndDraws(t *testing.T) {
	s := api.New(api.Config{Logger: slog.New(slog.DiscardHandler)})
	op := api.WithDeclaration(huma.Operation{OperationID: "follow-widgets", Method: http.MethodGet, Path: "/api/v1/widgets/live",
		Responses: map[string]*huma.Response{"200": {Description: "Widgets."}}},
		api.Declaration{Access: api.Caller, Draws: []string{api.StreamOpensBudget, api.StreamUserOpensBudget}, Caps: []api.ConcurrencyCap{{Plane: "widget", Policy: "widgets", Concurrent: 3}}})
	s.API.OpenAPI().AddOperation(&op)
	if len(op.Middlewares) != 0 {
		t.Errorf("the operation got %d middlewares: api charges a budget its handler draws itself", len(op.Middlewares))
	}
	d := api.DefaultLimits()
	want := []api.RateLimitEntry{
		{Plane: "widget", Policy: "widgets", Concurrent: 3},
		{Plane: "stream", Policy: api.StreamOpensBudget, Limit: d.StreamOpens.Limit, WindowS: 60, Burst: d.StreamOpens.Burst},
		{Plane: "stream", Policy: api.StreamUserOpensBudget, Limit: d.StreamUserOpens.Limit, WindowS: 60, Burst: d.StreamUserOpens.Burst},
		{Plane: "ip", Policy: "ip", Limit: d.IP.Limit, WindowS: 60, Burst: d.IP.Burst, AppliesTo: "unauthenticated"},
	}
	if got := op.Extensions["x-rate-limit"]; !reflect.DeepEqual(got, want) {
		t.Errorf("x-rate-limit %+v, want %+v", got, want)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}

	bad := api.WithDeclaration(huma.Operation{OperationID: "follow-gadgets", Method: http.MethodGet, Path: "/api/v1/gadgets/live"},
		api.Declaration{Access: api.Caller, Draws: []string{"gadget-opens"}})
	s.API.OpenAPI().AddOperation(&bad)
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), `"gadget-opens", which is no plane budget`) {
		t.Fatalf("Err() = %v, want the budget that is none named", err)
	}
}

// A plane budget drawn by a handler admits its burst, then refuses with
// the API's 429 of its plane and policy, and the true wait; it is none
// when the limits are disabled, or of a name no plane has.
func TestPlaneBudgetDraw(t *testing.T) {
	clk := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := api.Limits{StreamOpens: ratelimit.Rate{Limit: 60, Window: time.Minute, Burst: 2}, Store: func(b ratelimit.Budget) ratelimit.Limiter {
		m := ratelimit.NewMemory(b, ratelimit.MemoryOptions{})
		m.Now = func() time.Time { return clk }
		return m
	}}
	s := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Limits: l})
	b := s.PlaneBudget(api.StreamOpensBudget)
	if b == nil || b.Budget().Name != api.StreamOpensBudget {
		t.Fatalf("the open budget: %+v", b)
	}
	for i := range 2 {
		if d, e := b.Draw(context.Background(), "k"); e != nil || !d.Allowed {
			t.Fatalf("draw %d of the burst: %+v %v", i+1, d, e)
		}
	}
	d, e := b.Draw(context.Background(), "k")
	if d.Allowed || e == nil || e.GetStatus() != http.StatusTooManyRequests || e.GetHeaders().Get("Retry-After") != "1" {
		t.Fatalf("the third draw: %+v %+v", d, e)
	}
	// A refund gives back what a draw took: the burst is whole again.
	refunded, _ := b.Draw(context.Background(), "j")
	if b.Refund(context.Background(), "j", &refunded); refunded.Remaining(0) != 2 {
		t.Fatalf("a refunded draw says %d left, want the burst of 2", refunded.Remaining(0))
	}
	for i := range 2 {
		if d, e := b.Draw(context.Background(), "j"); e != nil || !d.Allowed {
			t.Fatalf("after a refund, draw %d of the burst: %+v %v", i+1, d, e)
		}
	}
	var env struct {
		Details struct {
			Scope, Policy string
			Limit         int
		}
	}
	raw, _ := json.Marshal(e)
	if err := json.Unmarshal(raw, &env); err != nil || env.Details.Scope != "stream" || env.Details.Policy != api.StreamOpensBudget || env.Details.Limit != 60 {
		t.Fatalf("the refusal: %s", raw)
	}
	if s.PlaneBudget("nope") != nil {
		t.Errorf("a budget of a name no plane has")
	}
	if api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Limits: api.Limits{Disabled: true}}).PlaneBudget(api.StreamOpensBudget) != nil {
		t.Errorf("a plane budget while the limits are disabled")
	}
}

// extensionOf is an extension that reports err.
type extensionOf struct{ err error }

func (x *extensionOf) Err() error { return x.err }

// A server keeps one extension per key, made once, and reports its
// mistakes with its own.
func TestExtension(t *testing.T) {
	type key struct{}
	made := 0
	s := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: []api.Feature{func(srv *api.Server) {
		for range 2 {
			srv.Extension(key{}, func() api.Extension { made++; return &extensionOf{} })
		}
	}}})
	x := s.Extension(key{}, func() api.Extension { made++; return &extensionOf{} }).(*extensionOf)
	if made != 1 {
		t.Fatalf("made %d extensions under one key, want 1", made)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	x.err = errors.New("a mistake of the extension's")
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "a mistake of the extension's") {
		t.Fatalf("Err() = %v, want the extension's", err)
	}
}

// huma runs no OnAddOperation hook for a Hidden operation, so it would be
// served without the budgets it declares: it is not served, and Err says
// why.
func TestHiddenOperationIsRefused(t *testing.T) {
	s := api.New(api.Config{Logger: slog.New(slog.DiscardHandler)})
	type out struct{ Body string }
	op := api.WithBudget(huma.Operation{OperationID: "secret-thing", Method: http.MethodGet, Path: "/api/v1/secret", Hidden: true}, api.Budget{Name: "secret", Default: "1/h"})
	huma.Register(s.API, op, func(context.Context, *struct{}) (*out, error) { return &out{"served"}, nil })
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "operation secret-thing is Hidden") {
		t.Fatalf("Err() = %v, want the hidden operation named", err)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/secret", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("the hidden operation answered %d %s", rec.Code, rec.Body)
	}
}
