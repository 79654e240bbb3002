// One job's progress: its state from GET /api/v1/jobs/{id}, followed live
// through its log (/api/v1/jobs/{id}/log) until it ends, as a progress bar
// and a status line ("running: 3 of 10", "succeeded: 10 items stored").
// A log that ends without a last word (it answers 204 once the job is
// over) sends us back to the job itself.
import { useEffect, useRef, useState } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { openStream, type StreamStatus } from "../../api/streams";
import { $api, checkSession, client } from "../../app/api";
import { ErrorNotice } from "../../app/ErrorNotice";
import { StreamNotice } from "../../app/StreamNotice";
import type { JobStatus } from "./types";

interface Seen {
  status: JobStatus;
  done: number;
  total?: number;
  error?: string;
}

const terminal = (s: JobStatus | undefined) => s === "succeeded" || s === "failed";

export function JobProgress({ jobId, known }: { jobId: string; known?: JobStatus }) {
  const qc = useQueryClient();
  // Once the log has closed, the job's record is what tells its end: asked
  // again each second until it says so (the record can lag the log).
  const logClosed = useRef(false);
  const job = $api.useQuery(
    "get",
    "/api/v1/jobs/{id}",
    { params: { path: { id: jobId } } },
    { refetchInterval: (q) => (logClosed.current && !terminal(q.state.data?.status) ? 1000 : false) },
  );
  const [seen, setSeen] = useState<Seen | null>(null);
  const [stream, setStream] = useState<StreamStatus>({ state: "connecting" });
  const over = terminal(seen?.status) || terminal(job.data?.status) || terminal(known);
  const refetch = useRef(job.refetch);
  refetch.current = job.refetch;

  useEffect(() => {
    if (over) return;
    const handle = openStream(client, "/api/v1/jobs/{id}/log", {
      params: { id: jobId },
      endsOn: ["job.succeeded", "job.failed"],
      onEvent: (ev) => {
        switch (ev.event) {
          case "job.progress":
            setSeen({ status: "running", done: ev.data.items_done, total: ev.data.items_total });
            break;
          case "job.succeeded":
            setSeen({ status: "succeeded", done: ev.data.items_total, total: ev.data.items_total });
            break;
          case "job.failed":
            setSeen((s) => ({ status: "failed", done: ev.data.items_done, total: s?.total, error: ev.data.error }));
            break;
        }
      },
      onStatus: (s) => {
        setStream(s);
        checkSession(s);
        // The log is over: the job's own record has its final state.
        if (s.state === "closed") {
          logClosed.current = true;
          void refetch.current();
        }
      },
    });
    return () => handle.close();
  }, [jobId, over]);

  // A job that ended changes the jobs list.
  useEffect(() => {
    if (over) void qc.invalidateQueries({ queryKey: ["get", "/api/v1/jobs"] });
  }, [over, qc]);

  const view = job.data;
  const status: JobStatus | undefined = terminal(seen?.status) ? seen?.status : terminal(view?.status) ? view?.status : (seen?.status ?? view?.status ?? known);
  const total = seen?.total ?? view?.items_total;
  const done = Math.max(seen?.done ?? 0, view?.items_done ?? 0);
  const error = seen?.error ?? view?.error;

  let text: string;
  switch (status) {
    case "succeeded":
      text = total !== undefined ? `succeeded: ${total} items stored` : "succeeded";
      break;
    case "failed":
      text = `failed: ${error ?? "no reason given"} (${done} items stored)`;
      break;
    case "running":
      text = total !== undefined ? `running: ${done} of ${total}` : "running";
      break;
    case "queued":
      text = "queued";
      break;
    default:
      text = "waiting for the job…";
  }

  return (
    <div className="job-progress stack" data-testid="job-progress">
      <progress max={total || 1} value={status === "succeeded" ? total || 1 : done} aria-label="Job progress" />
      <p role="status" aria-live="polite" data-testid="job-status" data-status={status ?? ""}>
        {text}
      </p>
      {!over && <StreamNotice status={stream} what="progress view" testId="job-stream-status" />}
      {job.isError && !seen && <ErrorNotice error={job.error} />}
    </div>
  );
}
