// Tests of the registry features declare streams and events in: its place among the features
// changes nothing but the order of the spec's tags, and each mistake of
// wiring is reported by the server's Err, never ignored.

package streams_test

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/streams"
)

// follower is a feature with a stream of its own and an event of its
// users', declared in either order.
func follower(s *api.Server) {
	api.Tag(s.API, "Things", "A feature's own operations.")
	streams.Add(s, streams.Operation{
		Operation: huma.Operation{OperationID: "follow-things", Path: api.Prefix + "/things/log", Summary: "Follow things", Description: "Things, live."},
		Events:    []streams.EventType{{Name: "thing.made", Data: thingMade{}, Doc: "A thing was made."}},
		Serve:     func(st *streams.Stream) {},
	})
	streams.DeclareEvents(s, streams.EventType{Name: "thing.made", Data: thingMade{}, Doc: "A thing was made."})
}

type thingMade struct {
	ID string `json:"id"`
}

// FollowClashEvent is named as the messages of follow-clash are.
type FollowClashEvent struct{}

// specOf is the spec of a server of features: its tags' names, and the
// rest.
func specOf(t *testing.T, features ...api.Feature) (tags []string, rest map[string]any) {
	t.Helper()
	s := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: features})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	raw, err := s.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rest); err != nil {
		t.Fatal(err)
	}
	for _, tag := range rest["tags"].([]any) {
		tags = append(tags, tag.(map[string]any)["name"].(string))
	}
	delete(rest, "tags")
	return tags, rest
}

// A feature's streams and events are the same whether the plane comes
// after it (they wait for the plane) or before (they join it): the events
// stream's messages include the feature's events either way. Only the
// order of the tags follows the order of the features.
func TestFeatureBeforeOrAfterThePlane(t *testing.T) {
	afterTags, after := specOf(t, follower, streams.New(streams.Config{}).Feature)
	beforeTags, before := specOf(t, streams.New(streams.Config{}).Feature, follower)
	if a, b := mustJSON(t, after), mustJSON(t, before); a != b {
		t.Fatalf("the spec with the plane after the feature differs from the spec with it before, beyond the tags:\n%s\n%s", a, b)
	}
	if !slices.Equal(afterTags, []string{"Operations", "Things", "Streams"}) || !slices.Equal(beforeTags, []string{"Operations", "Streams", "Things"}) {
		t.Fatalf("tags %v with the plane last, %v with it first", afterTags, beforeTags)
	}
	schemas := after["components"].(map[string]any)["schemas"].(map[string]any)
	for _, name := range []string{"FollowEventsEvent", "FollowThingsEvent"} {
		var titles []string
		for _, e := range schemas[name].(map[string]any)["oneOf"].([]any) {
			titles = append(titles, e.(map[string]any)["title"].(string))
		}
		if !slices.Contains(titles, "Event thing.made") || !slices.Contains(titles, "Event stream.closing") {
			t.Errorf("%s is one of %v, want thing.made and stream.closing among them", name, titles)
		}
	}
	if _, ok := after["paths"].(map[string]any)[api.Prefix+"/things/log"].(map[string]any)["head"]; !ok {
		t.Errorf("the feature's stream declares no HEAD")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Each mistake of wiring is an error of the server's Err: streams,
// events or gauges declared with no plane to serve them, two planes on
// one server, one plane on two servers, a user's cap below a caller's, a
// gauge's name that is none or is added twice, the schema of a stream's
// messages named as an event's data is.
func TestWiringMistakesAreReported(t *testing.T) {
	shared := streams.New(streams.Config{})
	api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: []api.Feature{shared.Feature}})
	for _, tc := range []struct {
		name     string
		features []api.Feature
		want     string
	}{
		{"no plane", []api.Feature{follower}, "no streams runtime serves them"},
		{"events without a plane", []api.Feature{func(s *api.Server) { streams.DeclareEvents(s, streams.EventType{Name: "x", Data: thingMade{}}) }}, "no streams runtime serves them"},
		{"a gauge without a plane", []api.Feature{gauge("things")}, "no streams runtime serves them"},
		{"a gauge's name", []api.Feature{gauge("Things"), streams.New(streams.Config{}).Feature}, `gauge "Things" is not a snake_case name`},
		{"a gauge twice", []api.Feature{gauge("things"), streams.New(streams.Config{}).Feature, gauge("things")}, `gauge "things" is not a snake_case name of at most 64 bytes, or is added twice`},
		{"two planes", []api.Feature{streams.New(streams.Config{}).Feature, streams.New(streams.Config{}).Feature}, "two streams runtimes"},
		{"a plane of another server", []api.Feature{shared.Feature}, "serves another already"},
		{"caps", []api.Feature{streams.New(streams.Config{Cap: streams.NewMemoryCap(8), UserCap: streams.NewMemoryCap(4)}).Feature}, "capped at 4, fewer than the 8"},
		{"a schema's name taken", []api.Feature{streams.New(streams.Config{}).Feature, func(s *api.Server) {
			streams.Add(s, streams.Operation{Operation: huma.Operation{OperationID: "follow-clash", Path: "/clash", Summary: "s", Description: "d"},
				Events: []streams.EventType{{Name: "clash", Data: FollowClashEvent{}}}, Serve: func(*streams.Stream) {}})
		}}, "follow-clash's messages is named FollowClashEvent, as another schema is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: tc.features}).Err()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Err() = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
