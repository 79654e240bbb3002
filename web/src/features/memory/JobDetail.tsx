// One job: GET /api/v1/jobs/{id}, and its progress followed live while it
// is queued or running.
import { $api } from "../../app/api";
import { ErrorNotice } from "../../app/ErrorNotice";
import { JobProgress } from "./JobProgress";

export function JobDetail({ id }: { id: string }) {
  const job = $api.useQuery("get", "/api/v1/jobs/{id}", { params: { path: { id } } });
  const j = job.data;
  return (
    <section className="stack">
      <h1 tabIndex={-1}>Job</h1>
      <p>
        <a href="#/jobs">All jobs</a>
      </p>
      {job.isPending && <p role="status">Loading the job…</p>}
      {job.isError && <ErrorNotice error={job.error} />}
      {j && (
        <>
          <dl className="fields card" data-testid="job-detail">
            <dt>Job</dt>
            <dd className="wrap">{j.job_id}</dd>
            <dt>Project</dt>
            <dd>{j.project}</dd>
            <dt>Status</dt>
            <dd data-testid="job-detail-status">{j.status}</dd>
            <dt>Items</dt>
            <dd>
              {j.items_done} of {j.items_total}
            </dd>
            <dt>Created</dt>
            <dd>{new Date(j.created_at).toLocaleString()}</dd>
            {j.finished_at && (
              <>
                <dt>Finished</dt>
                <dd>{new Date(j.finished_at).toLocaleString()}</dd>
              </>
            )}
            {j.error && (
              <>
                <dt>Error</dt>
                <dd>{j.error}</dd>
              </>
            )}
            <dt>Ingest id</dt>
            <dd className="wrap">
              <code>{j.ingest_id}</code>
            </dd>
          </dl>
          <JobProgress jobs={[{ jobId: j.job_id, known: j.status }]} />
        </>
      )}
    </section>
  );
}
