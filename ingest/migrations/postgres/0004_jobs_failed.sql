-- The failed jobs, for the count of them that every /metrics scrape reads
-- (JobCounts): jobs are never deleted, so without it the count would read
-- every job there ever was; with it, only the failed ones' index entries.
CREATE INDEX jobs_failed ON jobs (created_at) WHERE status = 'failed';
