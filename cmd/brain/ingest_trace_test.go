package main

import (
	"slices"
	"testing"
	"time"
)

// An ingest is one trace in Jaeger, over the wire: the request's span,
// named by its route and continuing the traceparent of a trusted caller,
// with its status and rate-limit decision; its statements; the enqueue;
// then, from the job's metadata, the job's wait in the queue and its work,
// with the work's statements. The access line of the request carries the
// trace's id.
func TestIngestTraceReachesJaeger(t *testing.T) {
	otlp, query := startJaeger(t)
	p := startProc(t, tracedEnv(otlp, memoryEnv(nil)))
	s := loginAdmin(t, p.base)
	const route = "/api/v1/memory/ingest"
	r := s.client.do("POST", route, map[string]any{"project": "garden", "items": []map[string]string{{"text": "Repot the basil"}}},
		s.cookie, traceparent).want(t, 202, "ingest")
	s.waitJob(r.str("job_id"), time.Minute)
	tr := fetchTrace(t, query, callerTrace, func(tr jaegerTrace) bool {
		// whole once the job's last statement (it marks the job succeeded) is in
		jobs := tr.named("job ingest")
		return len(jobs) == 1 && slices.ContainsFunc(tr.spans, func(sp jaegerSpan) bool {
			return sp.parent() == jobs[0].SpanID && sp.OperationName == "UPDATE"
		})
	})
	req := tr.request("POST "+route, map[string]any{"http.response.status_code": float64(202), "http.route": route,
		"ratelimit.plane": "session", "ratelimit.admitted": true, "ratelimit.policy": "session"})
	tr.childOf("INSERT", req) // the batch's statements
	enqueue := tr.childOf("enqueue ingest", req)
	tr.childOf("queue wait", enqueue)
	job := tr.childOf("job ingest", enqueue)
	tr.childOf("SELECT", job)
	accessLineTraced(t, p, route, callerTrace)
}
