// What a feature adds to the spec as it registers (extend.go and
// errors.go): a paragraph of its description, the error codes it sends
// and the quotas its refusals name.

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
// its description, its envelope's enum of codes and that of its quotas.
func specOf(t *testing.T, features ...api.Feature) (description string, codes, quotas []string, s *api.Server) {
	t.Helper()
	s = api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: append(documented(), features...)})
	raw, err := s.Spec()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Info       struct{ Description string }
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct{ Enum []string }
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.Components.Schemas
	return doc.Info.Description, schemas["Error"].Properties["code"].Enum, schemas["ErrorDetails"].Properties["quota"].Enum, s
}

// The platform's description says what the platform is and what every
// error looks like; each feature's paragraph comes between the two, in
// the order of the features.
func TestDescribe(t *testing.T) {
	plain, _, _, _ := specOf(t)
	if !strings.HasPrefix(plain, product.Name+" is an HTTP API") || !strings.HasSuffix(plain, "stable; switch on it.") {
		t.Fatalf("the platform's description:\n%s", plain)
	}
	about, _, two := strings.Cut(plain, "\n\n")
	if !two {
		t.Fatalf("the platform's description is one paragraph:\n%s", plain)
	}
	described := func(text string) api.Feature { return func(s *api.Server) { api.Describe(s, text) } }
	got, _, _, _ := specOf(t, described("Bookmarks: the URLs you keep."), described("Tags: words you put on them."))
	want := strings.Replace(plain, about, about+"\n\nBookmarks: the URLs you keep.\n\nTags: words you put on them.", 1)
	if got != want {
		t.Fatalf("with two features' paragraphs:\n%s\nwant:\n%s", got, want)
	}
}

// The envelope's enum of codes is the platform's (Codes) and those its
// features declare, each once and sorted. A code
// that is not kebab-case is a mistake Err reports.
func TestDeclareErrorCode(t *testing.T) {
	if _, codes, _, _ := specOf(t); !slices.Equal(codes, api.Codes()) {
		t.Fatalf("the enum with no feature's code: %v, want the platform's %v", codes, api.Codes())
	}
	exists := func(s *api.Server) { api.DeclareErrorCode(s, "bookmark-exists") }
	again := func(s *api.Server) { api.DeclareErrorCode(s, "bookmark-exists"); api.DeclareErrorCode(s, "a-first") }
	_, codes, _, s := specOf(t, exists, again)
	want := slices.Sorted(slices.Values(append(api.Codes(), "bookmark-exists", "a-first")))
	if !slices.Equal(codes, want) {
		t.Fatalf("the enum: %v, want %v", codes, want)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	_, _, _, s = specOf(t, func(s *api.Server) { api.DeclareErrorCode(s, "Bookmark_Exists") })
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), `"Bookmark_Exists" is not kebab-case`) {
		t.Fatalf("Err() = %v, want the code that is none named", err)
	}
}

// The enum of details.quota lists the quotas the server's features
// declare, each once and sorted; with none, quota is any string. A name
// that is not snake_case is a mistake Err reports.
func TestDeclareQuota(t *testing.T) {
	if _, _, quotas, _ := specOf(t); quotas != nil {
		t.Fatalf("the quotas with no feature's: %v, want no enum", quotas)
	}
	bookmarks := func(s *api.Server) { api.DeclareQuota(s, "bookmarks"); api.DeclareQuota(s, "tags") }
	again := func(s *api.Server) { api.DeclareQuota(s, "bookmarks"); api.DeclareQuota(s, "archives") }
	if _, _, quotas, _ := specOf(t, bookmarks, again); !slices.Equal(quotas, []string{"archives", "bookmarks", "tags"}) {
		t.Fatalf("the quotas: %v, want archives, bookmarks and tags", quotas)
	}
	_, _, quotas, s := specOf(t, func(s *api.Server) { api.DeclareQuota(s, "Bad Name") })
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), `"Bad Name" is not snake_case`) || quotas != nil {
		t.Fatalf("Err() = %v, quotas %v; want the name that is none named, and not in the enum", err, quotas)
	}
}
