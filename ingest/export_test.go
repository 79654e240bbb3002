package ingest

// IndexTerms are the index terms a search of userID's for s asks for.
func IndexTerms(userID string, s Search) []string { return indexQueryTerms(userID, s) }

// OneUserKey makes every user's key in the index the same until the test
// ends, as if all their keys collided. The test must not be parallel.
func OneUserKey(t interface{ Cleanup(func()) }) {
	saved := userKey
	userKey = func(string) string { return "samekeysamekey00" }
	t.Cleanup(func() { userKey = saved })
}

// JobCountQueries are the queries of QueuedJobs and JobCounts.
var JobCountQueries = []string{queuedJobsSQL, jobCountsSQL}
