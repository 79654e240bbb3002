package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/brain-template/brain/ingest"
)

// QuickStart is o with River's random delay before each maintenance task
// turned off, so that a test's Queue rescues stuck jobs as soon as it
// leads, not up to seconds later.
func QuickStart(o QueueOptions) QueueOptions {
	o.testOnly = true
	return o
}

// MigrateBefore applies brain's migrations that come before the one
// named name (NNNN_name.sql), and none of River's: a test of that
// migration fills the tables as they were before it, then runs Migrate.
func (db *DB) MigrateBefore(ctx context.Context, name string) error {
	ms, err := loadMigrations(db.Dialect)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(ms, func(m migration) bool { return m.name == name })
	if i < 0 {
		return fmt.Errorf("no migration named %s", name)
	}
	_, err = db.migrate(ctx, i)
	return err
}

// IndexTerms are the index terms a search of userID's for s asks for.
func IndexTerms(userID string, s ingest.Search) []string { return queryTerms(userID, s) }

// QuietOutages is the handler River logs through, with a clock.
var QuietOutages = quietOutages

// OneUserKey makes every user's key in the index the same until the test
// ends, as if all their keys collided. The test must not be parallel.
func OneUserKey(t interface{ Cleanup(func()) }) {
	saved := userKey
	userKey = func(string) string { return "samekeysamekey00" }
	t.Cleanup(func() { userKey = saved })
}

// JobCountQueries are the queries of QueuedJobs and JobCounts.
var JobCountQueries = []string{queuedJobsSQL, jobCountsSQL}
