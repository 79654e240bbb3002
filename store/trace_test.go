package store_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/brain-template/brain/internal/tracing"
	"github.com/brain-template/brain/store"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// A job enqueued in a traced request is worked in that request's trace:
// the enqueue is a span of the request, the job's wait in the queue and
// its work are spans of the enqueue, the work's statements are its
// children, and a line the job logs with its context carries the trace's
// id. A job enqueued outside a trace is worked in none.
func TestQueueCarriesTheTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	otel.SetTracerProvider(tp) // the process's, as tracing.Start makes it: a worker has no span to start from
	onEachDB(t, func(t *testing.T, db *store.DB) {
		logs := &strings.Builder{}
		logger := slog.New(tracing.Logs(slog.NewTextHandler(logs, nil)))
		worked := make(chan trace.SpanContext, 2)
		q := startQueue(t, db, func(ctx context.Context, id string) error {
			var one int
			if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
				return err
			}
			logger.InfoContext(ctx, "worked", "job", id)
			worked <- trace.SpanContextFromContext(ctx)
			return nil
		}, qopts{})

		ctx, request := tp.Tracer("test").Start(context.Background(), "request "+string(db.Dialect))
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.EnqueueTx(ctx, tx, testArgs{JobID: "traced"}, nil); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		request.End()
		if sc := <-worked; sc.TraceID() != request.SpanContext().TraceID() {
			t.Fatalf("the job was worked in trace %s, want the request's %s", sc.TraceID(), request.SpanContext().TraceID())
		}
		enqueue(t, db, q, "untraced", true)
		if sc := <-worked; sc.IsValid() {
			t.Errorf("a job enqueued outside a trace was worked in trace %s", sc.TraceID())
		}

		tid := request.SpanContext().TraceID()
		byName := map[string]sdktrace.ReadOnlySpan{}
		for _, s := range exp.GetSpans().Snapshots() {
			if s.SpanContext().TraceID() == tid {
				byName[s.Name()] = s
			}
		}
		parentOf := func(child, parent string) {
			t.Helper()
			c, p := byName[child], byName[parent]
			if c == nil || p == nil || c.Parent().SpanID() != p.SpanContext().SpanID() {
				t.Errorf("want span %q a child of %q in trace %s; the trace has %v", child, parent, tid, slices.Collect(maps.Keys(byName)))
			}
		}
		parentOf("enqueue test", "request "+string(db.Dialect))
		parentOf("queue wait", "enqueue test")
		parentOf("job test", "enqueue test")
		parentOf("SELECT", "job test")
		if l := logs.String(); !strings.Contains(l, "trace_id="+tid.String()) {
			t.Errorf("the job's log line does not carry trace_id=%s: %q", tid, l)
		}
	})
}
