// The settings pages against the settings tables: every setting of the
// platform's table documented once on the configuration page
// (docs/configuration.md), every setting of a module's on a page of
// docs/ (its own: the memory example's is docs/memory.md), each with the
// variable, flag and default the code has, and nothing documented that
// brain does not read. A fork that deletes a module with its page has
// nothing else to edit.

package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configDoc is the page whose table lists the platform's settings, as the
// messages name it; the pages of docs/ are from this package under root.
const (
	configDoc = "docs/configuration.md"
	root      = "../../"
)

// A docSetting is one variable of a row of a page's table.
type docSetting struct {
	file           string // the page, as configDoc names it
	line           int
	flag, def      string // flag without "--", "" for none; def "" for empty
	literalDef     bool   // the default is a value (in backticks, or "empty"), not prose
	meaningBlank   bool
	variablesInRow int
}

var (
	docVariable = regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
	docCode     = regexp.MustCompile("^`([^`]*)`")
	usageFlag   = regexp.MustCompile(`(?m)^  -(\S+)`)
)

// splitRow splits a Markdown table row into its cells (a \| is no
// separator).
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// readSettingsDocs parses the settings tables of the pages of docs/, each
// headed | variable | flag | default | meaning |: each variable they name,
// with its row's page, flag and default. configDoc must have one.
func readSettingsDocs(t *testing.T) map[string]docSetting {
	t.Helper()
	pages, err := filepath.Glob(root + "docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no page in %sdocs: %v", root, err)
	}
	out := map[string]docSetting{}
	for _, p := range pages {
		if !readSettingsDoc(t, strings.TrimPrefix(p, root), out) && p == root+configDoc {
			t.Fatalf("%s has no table headed | variable | flag | default | meaning |: the test reads the platform's settings from it", configDoc)
		}
	}
	return out
}

// readSettingsDoc adds to out the variables of page's settings table, if
// it has one.
func readSettingsDoc(t *testing.T, page string, out map[string]docSetting) bool {
	t.Helper()
	b, err := os.ReadFile(root + page)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start := slices.IndexFunc(lines, func(l string) bool {
		c := splitRow(l)
		return len(c) == 4 && c[0] == "variable" && c[1] == "flag" && c[2] == "default"
	})
	if start < 0 {
		return false
	}
	for i := start + 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		cells := splitRow(lines[i])
		if len(cells) != 4 {
			t.Fatalf("%s:%d: a row of %d cells, want 4 (variable, flag, default, meaning): %s", page, i+1, len(cells), lines[i])
		}
		vars := docVariable.FindAllStringSubmatch(cells[0], -1)
		if len(vars) == 0 {
			t.Fatalf("%s:%d: the row names no variable in backticks: %s", page, i+1, lines[i])
		}
		s := docSetting{file: page, line: i + 1, meaningBlank: cells[3] == "", variablesInRow: len(vars)}
		if cells[1] != "—" && cells[1] != "" {
			m := docCode.FindStringSubmatch(cells[1])
			if m == nil || !strings.HasPrefix(m[1], "--") {
				t.Fatalf("%s:%d: the flag cell is %q; want `--name` (or — for none)", page, i+1, cells[1])
			}
			s.flag, _, _ = strings.Cut(strings.TrimPrefix(m[1], "--"), " ")
		}
		switch m := docCode.FindStringSubmatch(cells[2]); {
		case cells[2] == "empty":
			s.literalDef = true
		case m != nil && "`"+m[1]+"`" == cells[2]:
			s.def, s.literalDef = m[1], true
		default:
			s.def = cells[2] // prose: a setting whose default is not one value
		}
		for _, v := range vars {
			if prev, dup := out[v[1]]; dup {
				t.Errorf("%s:%d: %s is listed again (first at %s:%d): keep one row", page, i+1, v[1], prev.file, prev.line)
			}
			out[v[1]] = s
		}
	}
	return true
}

func TestConfigurationDocMatchesSettings(t *testing.T) {
	doc := readSettingsDocs(t)
	const fix = "fix the row (the code, the settings tables of cmd/brain/settings.go and of the modules, is what brain reads)"

	// The settings tables, the platform's and the modules': variable,
	// flag and default.
	c := newConfig()
	platform := map[string]bool{}
	for _, s := range tables(c)[0].Rows {
		platform[s.Env] = true
	}
	inCode := map[string]bool{}
	for _, s := range allSettings(c) {
		inCode[s.Env] = true
		d, ok := doc[s.Env]
		if !ok {
			def := "`" + s.Default + "`"
			if s.Default == "" {
				def = "empty"
			}
			page := configDoc
			if !platform[s.Env] {
				page = "its module's page in docs/ (the memory example's is docs/memory.md)"
			}
			t.Errorf("no page of docs/ has a row for %s, a setting of the settings tables: add | `%s` | `--%s` | %s | %s | to the table of %s", s.Env, s.Env, s.Flag, def, s.Usage, page)
			continue
		}
		if platform[s.Env] && d.file != configDoc {
			t.Errorf("%s:%d: %s is a setting of the platform's: move its row to %s", d.file, d.line, s.Env, configDoc)
		}
		if d.flag != s.Flag {
			t.Errorf("%s:%d: %s's flag is --%s; the settings table says --%s: %s", d.file, d.line, s.Env, d.flag, s.Flag, fix)
		}
		if !d.literalDef || d.def != s.Default {
			want := "`" + s.Default + "`"
			if s.Default == "" {
				want = "empty"
			}
			got := "`" + d.def + "`"
			if !d.literalDef {
				got = d.def
			} else if d.def == "" {
				got = "empty"
			}
			t.Errorf("%s:%d: %s's default is %s; the settings table says %s: %s", d.file, d.line, s.Env, got, want, fix)
		}
		if d.variablesInRow != 1 {
			t.Errorf("%s:%d: %s shares its row with other variables; a setting of the settings table has a row of its own", d.file, d.line, s.Env)
		}
		if d.meaningBlank {
			t.Errorf("%s:%d: %s has no meaning: say what it sets, as its usage does (%q)", d.file, d.line, s.Env, s.Usage)
		}
	}

	// The budget settings beside the tables (BRAIN_BUDGETS): documented
	// on the configuration page, with no default of their own to compare.
	known, _ := budgetSettings()
	for _, env := range known {
		if inCode[env] {
			continue
		}
		inCode[env] = true
		d, ok := doc[env]
		switch {
		case !ok || d.file != configDoc:
			t.Errorf("%s has no row for %s, a budget setting brain reads beside the settings tables: add it to its table", configDoc, env)
		case d.literalDef:
			t.Errorf("%s:%d: %s has no default value of its own (it overrides the budgets operations declare); say so in words", d.file, d.line, env)
		case d.meaningBlank:
			t.Errorf("%s:%d: %s has no meaning: say what it sets", d.file, d.line, env)
		}
	}

	// Nothing documented that brain does not read.
	for env, d := range doc {
		if !inCode[env] {
			t.Errorf("%s:%d: %s is no setting of brain's (neither in a settings table nor a budget setting): remove its row, or add the setting", d.file, d.line, env)
		}
	}

	// The flags: every flag brain takes is documented, and only those.
	var usage strings.Builder
	if _, err := parseConfig("brain", []string{"-h"}, func(string) string { return "" }, &usage); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("parseConfig -h: %v, want flag.ErrHelp", err)
	}
	flags := map[string]bool{}
	for _, m := range usageFlag.FindAllStringSubmatch(usage.String(), -1) {
		flags[m[1]] = true
	}
	documented := map[string]bool{}
	for env, d := range doc {
		if d.flag == "" {
			continue
		}
		documented[d.flag] = true
		if !flags[d.flag] {
			t.Errorf("%s:%d: %s's flag --%s is no flag of brain's: %s", d.file, d.line, env, d.flag, fix)
		}
	}
	for f := range flags {
		if !documented[f] {
			t.Errorf("brain takes the flag --%s, which no page of docs/ names: add it to the row of its variable", f)
		}
	}
	if t.Failed() {
		t.Logf("the pages of docs/ list %d variables; the code reads %d", len(doc), len(inCode))
	}
}
