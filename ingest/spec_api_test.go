// The memory example's spec states the bounds its service keeps.
package ingest_test

import (
	"encoding/json"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/ingest"
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
