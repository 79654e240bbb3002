// The configuration page (docs/configuration.md) against the settings
// tables, the platform's and the modules': every setting documented
// once, with the variable, flag and default the code has, and nothing
// documented that brain does not read.
package main

import (
	"errors"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configDoc is the page whose table lists every setting, as the messages
// name it; configDocPath is where it is from this package.
const (
	configDoc     = "docs/configuration.md"
	configDocPath = "../../" + configDoc
)

// A docSetting is one variable of a row of the page's table.
type docSetting struct {
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

// readConfigDoc parses the page's table: each variable it names, with its
// row's flag and default.
func readConfigDoc(t *testing.T) map[string]docSetting {
	t.Helper()
	b, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start := slices.IndexFunc(lines, func(l string) bool {
		c := splitRow(l)
		return len(c) == 4 && c[0] == "variable" && c[1] == "flag" && c[2] == "default"
	})
	if start < 0 {
		t.Fatalf("%s has no table headed | variable | flag | default | meaning |: the test reads the settings from it", configDoc)
	}
	out := map[string]docSetting{}
	for i := start + 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		cells := splitRow(lines[i])
		if len(cells) != 4 {
			t.Fatalf("%s:%d: a row of %d cells, want 4 (variable, flag, default, meaning): %s", configDoc, i+1, len(cells), lines[i])
		}
		vars := docVariable.FindAllStringSubmatch(cells[0], -1)
		if len(vars) == 0 {
			t.Fatalf("%s:%d: the row names no variable in backticks: %s", configDoc, i+1, lines[i])
		}
		s := docSetting{line: i + 1, meaningBlank: cells[3] == "", variablesInRow: len(vars)}
		if cells[1] != "—" && cells[1] != "" {
			m := docCode.FindStringSubmatch(cells[1])
			if m == nil || !strings.HasPrefix(m[1], "--") {
				t.Fatalf("%s:%d: the flag cell is %q; want `--name` (or — for none)", configDoc, i+1, cells[1])
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
				t.Errorf("%s:%d: %s is listed again (first at line %d): keep one row", configDoc, i+1, v[1], prev.line)
			}
			out[v[1]] = s
		}
	}
	return out
}

func TestConfigurationDocMatchesSettings(t *testing.T) {
	doc := readConfigDoc(t)
	const fix = "fix the row in " + configDoc + "'s table (the code, the settings tables of cmd/brain/settings.go and of the modules, is what brain reads)"

	// The settings tables, the platform's and the modules': variable,
	// flag and default.
	inCode := map[string]bool{}
	for _, s := range allSettings(newConfig()) {
		inCode[s.Env] = true
		d, ok := doc[s.Env]
		if !ok {
			def := "`" + s.Default + "`"
			if s.Default == "" {
				def = "empty"
			}
			t.Errorf("%s has no row for %s, a setting of the settings tables: add | `%s` | `--%s` | %s | %s | to its table", configDoc, s.Env, s.Env, s.Flag, def, s.Usage)
			continue
		}
		if d.flag != s.Flag {
			t.Errorf("%s:%d: %s's flag is --%s; the settings table says --%s: %s", configDoc, d.line, s.Env, d.flag, s.Flag, fix)
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
			t.Errorf("%s:%d: %s's default is %s; the settings table says %s: %s", configDoc, d.line, s.Env, got, want, fix)
		}
		if d.variablesInRow != 1 {
			t.Errorf("%s:%d: %s shares its row with other variables; a setting of the settings table has a row of its own", configDoc, d.line, s.Env)
		}
		if d.meaningBlank {
			t.Errorf("%s:%d: %s has no meaning: say what it sets, as its usage does (%q)", configDoc, d.line, s.Env, s.Usage)
		}
	}

	// The budget settings beside the table (BRAIN_BUDGETS, the MEM_*
	// aliases): documented, with no default of their own to compare.
	for _, env := range budgetSettings() {
		if inCode[env] {
			continue
		}
		inCode[env] = true
		d, ok := doc[env]
		switch {
		case !ok:
			t.Errorf("%s has no row for %s, a budget setting brain reads (budgetSettings: BRAIN_BUDGETS and the modules' budget aliases): add it to its table", configDoc, env)
		case d.literalDef:
			t.Errorf("%s:%d: %s has no default value of its own (it overrides the budgets operations declare); say so in words, as the other budget settings do", configDoc, d.line, env)
		case d.meaningBlank:
			t.Errorf("%s:%d: %s has no meaning: say what it sets", configDoc, d.line, env)
		}
	}

	// Nothing documented that brain does not read.
	for env, d := range doc {
		if !inCode[env] {
			t.Errorf("%s:%d: %s is no setting of brain's (neither in a settings table nor a budget setting): remove its row, or add the setting", configDoc, d.line, env)
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
			t.Errorf("%s:%d: %s's flag --%s is no flag of brain's: %s", configDoc, d.line, env, d.flag, fix)
		}
	}
	for f := range flags {
		if !documented[f] {
			t.Errorf("brain takes the flag --%s, which %s does not name: add it to the row of its variable", f, configDoc)
		}
	}
	if t.Failed() {
		t.Logf("%s lists %d variables; the code reads %d", configDoc, len(doc), len(inCode))
	}
}
