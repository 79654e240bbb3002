// The memory example's spec states the bounds its service keeps.

package ingest_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/streams"
)

// documented are the features of the committed spec: the memory example,
// on a service without a store (its operations are declared, never
// served).
func documented() []api.Feature {
	return []api.Feature{ingest.Feature(ingest.NewService(nil, ingest.Config{}))}
}

// The snippet's bound in the spec is the one the service keeps.
func TestSpecBoundsSnippets(t *testing.T) {
	raw, err := api.New(api.Config{Features: documented()}).Spec()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					MaxLength int `json:"maxLength"`
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Components.Schemas["IngestResultView"].Properties["snippet"].MaxLength; got != ingest.MaxSnippetBytes {
		t.Fatalf("IngestResultView.snippet's maxLength is %d, the service's bound %d", got, ingest.MaxSnippetBytes)
	}
}

// The example adds to the platform's spec what it brings: its paragraph
// of the description, its error code, in the enum of Error.code, its
// quotas, in that of details.quota, and its gauge of the live snapshot,
// even documented without a store.
func TestSpecDescribesTheExample(t *testing.T) {
	s := api.New(api.Config{Features: append(documented(), streams.New(streams.Config{}).Feature)})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	raw, err := s.Spec()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Info       struct{ Description string }
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum       []string
					Properties map[string]any
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Info.Description, "\n\nMemory: each user ingests batches of notes") {
		t.Errorf("the description has no paragraph of the example's:\n%s", doc.Info.Description)
	}
	if !slices.Contains(doc.Components.Schemas["Error"].Properties["code"].Enum, "idempotency-key-reused") {
		t.Errorf("Error.code's enum %v lacks idempotency-key-reused, which the example sends", doc.Components.Schemas["Error"].Properties["code"].Enum)
	}
	if q := doc.Components.Schemas["ErrorDetails"].Properties["quota"].Enum; !slices.Equal(q, []string{ingest.QuotaItems, ingest.QuotaJobs}) {
		t.Errorf("details.quota's enum %v; want the example's quotas, items and queued_jobs", q)
	}
	if _, ok := doc.Components.Schemas["LiveSnapshot"].Properties["gauges"].Properties["jobs_queued"]; !ok {
		t.Errorf("the live snapshot's gauges do not list jobs_queued, which the example adds")
	}
}
