package streams

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/api"
)

// AddGauge adds a gauge to the live snapshot (GET /api/v1/system/live):
// its gauges.name is what read returns, such as the rows of a queue
// waiting for a worker, and doc says what it counts in the spec. The
// snapshot reads it at most once a second, one stream at a time, with a
// deadline of a second; while a read is under way, and when one fails
// (which is logged as an outage), the streams send the last value read,
// 0 before the first. Call it from an api.Feature, before or after the
// plane's:
//
//	streams.AddGauge(s, "bookmarks_unread", "Bookmarks of every user not yet read.", store.CountUnread)
//
// A name is snake_case, at most 64 bytes, and added once; s.Err reports
// one that is not.
func AddGauge(s *api.Server, name, doc string, read func(ctx context.Context) (int64, error)) {
	d := doorOf(s)
	if !gaugeName.MatchString(name) || slices.ContainsFunc(d.gauges, func(g gauge) bool { return g.name == name }) {
		d.errs = append(d.errs, fmt.Errorf("streams: gauge %q is not a snake_case name of at most 64 bytes, or is added twice", name))
		return
	}
	d.gauges = append(d.gauges, gauge{name, doc, read})
	if d.plane != nil { // the live stream is declared already
		declareGauges(s.API.OpenAPI().Components.Schemas, d.gauges)
	}
}

// A gauge is one of the live snapshot's gauges ([AddGauge]).
type gauge struct {
	name, doc string
	read      func(ctx context.Context) (int64, error)
}

// gaugeName is what a gauge's name may be.
var gaugeName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// declareGauges makes the schema of the snapshot's gauges, in reg, list
// gauges, each an integer always present.
func declareGauges(reg huma.Registry, gauges []gauge) {
	p := reg.Schema(reflect.TypeFor[LiveSnapshot](), false, liveEvent.Name).Properties["gauges"]
	p.Properties, p.Required = map[string]*huma.Schema{}, nil
	for _, g := range gauges {
		p.Properties[g.name] = &huma.Schema{Type: huma.TypeInteger, Format: "int64", Description: g.doc}
		p.Required = append(p.Required, g.name)
	}
}

// readGauges returns the values of gauges, each read with a deadline of a
// second; one that fails keeps its value in last, and its failure is
// logged as an outage, by the logger of ctx (the stream's). The stream's
// end does not cut a read short.
func readGauges(ctx context.Context, s *api.Server, gauges []gauge, last map[string]int64) map[string]int64 {
	values := make(map[string]int64, len(gauges))
	for _, g := range gauges {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		n, err := g.read(rctx)
		cancel()
		if err != nil {
			s.LogOutage(ctx, fmt.Errorf("gauge %s: %w", g.name, err))
			n = last[g.name]
		}
		values[g.name] = n
	}
	return values
}
