// Package apicheck finds the changes between two OpenAPI documents that break
// clients: oasdiff's ERR-level checks, plus the rate-limit declarations it cannot see.
package apicheck

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oasdiff/oasdiff/checker"
	"github.com/oasdiff/oasdiff/diff"
	"github.com/oasdiff/oasdiff/load"
)

// A Finding is one breaking change.
type Finding struct {
	ID     string // an oasdiff check id, or one of the IDRateLimit ids
	Method string // upper case; empty for a change not tied to an operation
	Path   string
	// Component is what a change tied to no operation concerns, as
	// securitySchemes/session, or the section and subject, as security/session.
	Component string
	Text      string
}

// String is the finding as the gate prints it.
func (f Finding) String() string {
	return fmt.Sprintf("[%s] %s: %s", f.ID, f.where(), f.Text)
}

func (f Finding) where() string {
	if f.Method == "" && f.Path == "" {
		return f.Component
	}
	return f.Method + " " + f.Path
}

// Check compares rev with base and returns every breaking change, sorted by
// path, method and id.
func Check(base, rev []byte) ([]Finding, error) {
	s1, err := load.NewSpecInfoFromData(openapi3.NewLoader(), base, "base")
	if err != nil {
		return nil, fmt.Errorf("apicheck: load base: %w", err)
	}
	s2, err := load.NewSpecInfoFromData(openapi3.NewLoader(), rev, "revision")
	if err != nil {
		return nil, fmt.Errorf("apicheck: load revision: %w", err)
	}
	findings := rateLimitBreaking(s1.Spec, s2.Spec)
	d, sources, err := diff.GetWithOperationsSourcesMap(diff.NewConfig(), s1, s2)
	if err != nil {
		return nil, fmt.Errorf("apicheck: diff: %w", err)
	}
	changes := checker.CheckBackwardCompatibilityUntilLevel(checker.NewConfig(checker.GetAllChecks()), d, sources, checker.ERR)
	l := checker.NewDefaultLocalizer()
	for _, c := range changes {
		if c.GetLevel() != checker.ERR {
			continue
		}
		f := Finding{ID: c.GetId(), Method: strings.ToUpper(c.GetOperation()), Path: c.GetPath(), Text: c.GetUncolorizedText(l)}
		if f.Method == "" && f.Path == "" {
			f.Component = component(c)
		}
		findings = append(findings, f)
	}
	slices.SortStableFunc(findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Method, b.Method),
			cmp.Compare(a.Component, b.Component), cmp.Compare(a.ID, b.ID))
	})
	return findings, nil
}

// component names what c, tied to no operation, concerns: its component kind
// (or section) and its first argument, the component's name (or subject).
func component(c checker.Change) string {
	kind := c.GetSection()
	if cc, ok := c.(checker.ComponentChange); ok {
		kind = cc.Component
	}
	if args := c.GetArgs(); len(args) > 0 {
		kind += "/" + strings.ReplaceAll(fmt.Sprint(args[0]), " ", "") // one field of an ignore line
	}
	return kind
}
