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
// gauges.name is what read returns, and doc says what it counts. It is
// read at most once a second, by one stream at a time, with a second's
// deadline; while a read is under way or after one fails (logged as an
// outage), streams send the last value, 0 before the first. Call it from
// an api.Feature, before or after the plane's:
//
//	streams.AddGauge(s, "bookmarks_unread", "Bookmarks of every user not yet read.", store.CountUnread)
//
// A name is snake_case, at most 64 bytes, added once; s.Err reports one
// that is not.
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

type gauge struct {
	name, doc string
	read      func(ctx context.Context) (int64, error)
}

var gaugeName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// declareGauges lists gauges in the schema of the snapshot's gauges.
func declareGauges(reg huma.Registry, gauges []gauge) {
	p := reg.Schema(reflect.TypeFor[LiveSnapshot](), false, liveEvent.Name).Properties["gauges"]
	p.Properties, p.Required = map[string]*huma.Schema{}, nil
	for _, g := range gauges {
		p.Properties[g.name] = &huma.Schema{Type: huma.TypeInteger, Format: "int64", Description: g.doc}
		p.Required = append(p.Required, g.name)
	}
}

// readGauges reads gauges with a deadline of a second each; one that
// fails keeps its value in last and is logged as an outage.
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
