package store

import (
	"context"

	"github.com/brain-template/brain/ingest"
)

// QuickStart is o with River's random delay before each maintenance task
// turned off, so that a test's Queue rescues stuck jobs as soon as it
// leads, not up to seconds later.
func QuickStart(o QueueOptions) QueueOptions {
	o.testOnly = true
	return o
}

// MigrateTo brings db's schema up to version, and no further.
func MigrateTo(ctx context.Context, db *DB, version int) (int, error) {
	return db.migrate(ctx, version)
}

// IndexTerms are the index terms a search of userID's for s asks for.
func IndexTerms(userID string, s ingest.Search) []string { return queryTerms(userID, s) }
