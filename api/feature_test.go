// What a feature adds to the spec through the door (feature.go): a
// paragraph of its description, and the error codes it sends.
package api_test

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/product"
)

// specOf is the spec of a server with features (and the platform's), as
// its description and its envelope's enum of codes.
func specOf(t *testing.T, features ...api.Feature) (description string, codes []string, s *api.Server) {
	t.Helper()
	s = api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: append(documented(), features...)})
	raw, err := s.Spec()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Info       struct{ Description string }
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Code struct{ Enum []string }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Info.Description, doc.Components.Schemas.Error.Properties.Code.Enum, s
}

// The platform's description says what the platform is and what every
// error looks like; each feature's paragraph comes between the two, in
// the order of the features.
func TestDescribe(t *testing.T) {
	plain, _, _ := specOf(t)
	if !strings.HasPrefix(plain, product.Name+" is an HTTP API") || !strings.HasSuffix(plain, "stable; switch on it.") {
		t.Fatalf("the platform's description:\n%s", plain)
	}
	about, _, two := strings.Cut(plain, "\n\n")
	if !two {
		t.Fatalf("the platform's description is one paragraph:\n%s", plain)
	}
	described := func(text string) api.Feature { return func(s *api.Server) { api.Describe(s, text) } }
	got, _, _ := specOf(t, described("Bookmarks: the URLs you keep."), described("Tags: words you put on them."))
	want := strings.Replace(plain, about, about+"\n\nBookmarks: the URLs you keep.\n\nTags: words you put on them.", 1)
	if got != want {
		t.Fatalf("with two features' paragraphs:\n%s\nwant:\n%s", got, want)
	}
}

// The envelope's enum of codes is the platform's (Codes) and those its
// features declare, each once and sorted. A code
// that is not kebab-case is a mistake Err reports.
func TestDeclareErrorCode(t *testing.T) {
	if _, codes, _ := specOf(t); !slices.Equal(codes, api.Codes()) {
		t.Fatalf("the enum with no feature's code: %v, want the platform's %v", codes, api.Codes())
	}
	exists := func(s *api.Server) { api.DeclareErrorCode(s, "bookmark-exists") }
	again := func(s *api.Server) { api.DeclareErrorCode(s, "bookmark-exists"); api.DeclareErrorCode(s, "a-first") }
	_, codes, s := specOf(t, exists, again)
	want := slices.Sorted(slices.Values(append(api.Codes(), "bookmark-exists", "a-first")))
	if !slices.Equal(codes, want) {
		t.Fatalf("the enum: %v, want %v", codes, want)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	_, _, s = specOf(t, func(s *api.Server) { api.DeclareErrorCode(s, "Bookmark_Exists") })
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), `"Bookmark_Exists" is not kebab-case`) {
		t.Fatalf("Err() = %v, want the code that is none named", err)
	}
}
