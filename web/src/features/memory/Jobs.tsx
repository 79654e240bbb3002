// The jobs page: GET /api/v1/jobs, newest first, a page at a time; the list
// is fetched again when the events stream says a job was queued or ended.
import { useEffect } from "react";
import { keepPreviousData, useQueryClient } from "@tanstack/react-query";
import { subscribeEvents } from "../../api/streams";
import { $api, checkSession, client } from "../../app/api";
import { ErrorNotice } from "../../app/ErrorNotice";
import { Pager, useCursorPages } from "../../app/Pager";
import { href } from "../../app/router";

export function Jobs() {
  const qc = useQueryClient();
  const pages = useCursorPages();
  const jobs = $api.useQuery("get", "/api/v1/jobs", { params: { query: { limit: 20, cursor: pages.cursor } } }, { placeholderData: keepPreviousData });

  useEffect(
    () =>
      subscribeEvents(client, (ev) => {
        if (ev.event === "job.queued" || ev.event === "job.succeeded" || ev.event === "job.failed" || ev.event === "stream.gap")
          void qc.invalidateQueries({ queryKey: ["get", "/api/v1/jobs"] });
      }, checkSession),
    [qc],
  );

  return (
    <section className="stack">
      <h1 tabIndex={-1}>Jobs</h1>
      {jobs.isPending && <p role="status">Loading jobs…</p>}
      {jobs.isError && <ErrorNotice error={jobs.error} />}
      {jobs.data &&
        (jobs.data.jobs.length === 0 ? (
          <p>No jobs yet. <a href="#/ingest">Ingest some notes.</a></p>
        ) : (
          <ul className="list" data-testid="jobs-list" aria-label="Jobs" aria-busy={jobs.isPlaceholderData}>
            {jobs.data.jobs.map((j) => (
              <li key={j.job_id} className="card row" data-testid="job-row">
                <a href={href("jobs", j.job_id)} className="wrap">
                  {j.job_id}
                </a>
                <span className={`badge ${j.status}`}>{j.status}</span>
                <span className="muted small">
                  {j.project} · {j.items_done} of {j.items_total} items · {new Date(j.created_at).toLocaleString()}
                </span>
              </li>
            ))}
          </ul>
        ))}
      {jobs.data && <Pager pages={pages} nextCursor={jobs.data.next_cursor} busy={jobs.isPlaceholderData} label="Job pages" />}
    </section>
  );
}
