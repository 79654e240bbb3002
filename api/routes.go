package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/internal/product"
)

// addRoutes registers the platform's own operations, the probes. Every
// other operation comes in by Config.Features.
func addRoutes(api huma.API, cfg Config) {
	probes := WithAccess(api, Probe)
	tags := Tag(api, "Operations", "Probes for whoever runs the service: is it alive, and can it serve.")
	huma.Register(probes, huma.Operation{
		OperationID: "get-health",
		Method:      http.MethodGet,
		Path:        Prefix + "/health",
		Summary:     "Liveness probe",
		Description: "Answers 200 while the process serves HTTP. Never rate limited.",
		Tags:        tags,
	}, handleHealth(cfg.BuildVersion))

	huma.Register(probes, huma.Operation{
		OperationID: "get-ready",
		Method:      http.MethodGet,
		Path:        Prefix + "/ready",
		Summary:     "Readiness probe",
		Description: "Answers 200 only when every store " + product.Name + " depends on answers, else 503 with the failing checks in details.errors. Never rate limited.",
		Tags:        tags,
		Errors:      []int{http.StatusServiceUnavailable},
	}, handleReady(cfg.Ready))
}

// healthOutput is the body of GET /api/v1/health.
type healthOutput struct {
	Body struct {
		Status  string `json:"status" enum:"ok" doc:"Always ok while the server answers."`
		Version string `json:"version" example:"v1.2.3" doc:"The server binary's version."`
	}
}

func handleHealth(version string) func(context.Context, *struct{}) (*healthOutput, error) {
	if version == "" {
		version = "dev"
	}
	return func(ctx context.Context, _ *struct{}) (*healthOutput, error) {
		out := &healthOutput{}
		out.Body.Status = "ok"
		out.Body.Version = version
		return out, nil
	}
}

// readyOutput is the body of GET /api/v1/ready.
type readyOutput struct {
	Body struct {
		Status string   `json:"status" enum:"ready" doc:"Always ready on a 200."`
		Checks []string `json:"checks" nullable:"false" doc:"The checks that passed."`
	}
}

// readyTimeout bounds one readiness check, so a hung store answers 503
// before the prober gives up.
const readyTimeout = 2 * time.Second

func handleReady(checks []Check) func(context.Context, *struct{}) (*readyOutput, error) {
	return func(ctx context.Context, _ *struct{}) (*readyOutput, error) {
		out := &readyOutput{}
		out.Body.Status = "ready"
		out.Body.Checks = []string{}
		var failed []FieldError
		for _, c := range checks {
			cctx, cancel := context.WithTimeout(ctx, readyTimeout)
			err := c.Check(cctx)
			cancel()
			if err != nil {
				Logger(ctx).Warn("readiness check failed", "check", c.Name, "error", err)
				failed = append(failed, FieldError{Location: "checks." + c.Name, Message: "not answering"})
				continue
			}
			out.Body.Checks = append(out.Body.Checks, c.Name)
		}
		if len(failed) > 0 {
			return nil, NewError(http.StatusServiceUnavailable, product.Name+" is not ready: a store does not answer", failed...)
		}
		return out, nil
	}
}
