// Package settings is the row type of brain's settings table and the
// parsers and formatters rows share. A setting is a flag and an
// environment variable with a default and a usage line; the platform
// (cmd/brain) and each feature (such as ingest) declare their own rows,
// and cmd/brain reads them all, flag over variable over default.
//
// A default is written once: a row's Default is formatted from the
// package constant the code uses (Int, Duration, Size, a rate's
// String), never restated as a literal.
package settings

// A Setting ties a flag and an environment variable to a value. Set
// parses a value given as text (the default, the variable or the flag)
// into the field the row was made for; its error says what is wanted,
// and the caller names the setting.
type Setting struct {
	Flag, Env, Default, Usage string
	// Secret marks a value that may hold a password: it is never shown
	// in the usage or in an error.
	Secret bool
	Set    func(v string) error
}

// A Table is what one package declares: its rows, and the variables
// beside them that override parts of its budgets.
type Table struct {
	Rows    []Setting
	Aliases []BudgetAlias
}

// Overrides are the budget overrides read so far: each budget's limits
// (ratelimit.ParseRates' syntax) by budget name, and where they came
// from (a variable or a flag, as an error names it).
type Overrides struct {
	Limits, From map[string]string
}

// A BudgetAlias is a set of environment variables that override parts of
// the budgets a feature declares, beside the generic BRAIN_BUDGETS.
type BudgetAlias struct {
	// Envs are the variables Read reads.
	Envs []string
	// Families are prefixes of variable names: a variable set under one
	// of them that is none of Envs is a typo, which stops start-up.
	Families []string
	// Read reads the variables with getenv into o. A budget o names
	// already is left as it is; a bad value is an error naming its
	// variable.
	Read func(getenv func(string) string, o Overrides) error
}
