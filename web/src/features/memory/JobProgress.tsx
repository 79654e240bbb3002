// The progress of one or more jobs (a large paste is sent as several
// batches, each its own job) as one progress bar and one status line
// ("running: 1,200 of 2,000", "succeeded: 2,000 items stored"). Each job's
// state comes from GET /api/v1/jobs/{id}, followed live through its log
// (/api/v1/jobs/{id}/log) until it ends. A log that ends without a last word
// (it answers 204 once the job is over) sends us back to the job itself.
// Of several jobs, one log is followed at a time, the first not over (they
// are queued in order): a browser holds few streams at once.
import { useCallback, useEffect, useRef, useState } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { openStream, type StreamStatus } from "../../api/streams";
import { $api, checkSession, client } from "../../app/api";
import { ErrorNotice } from "../../app/ErrorNotice";
import { StreamNotice } from "../../app/StreamNotice";
import type { JobStatus } from "./types";

/** A job to follow: its id, the status the caller last heard, and its size when the caller knows it. */
export interface Followed {
  jobId: string;
  known?: JobStatus;
  total?: number;
}

interface Seen {
  status: JobStatus;
  done: number;
  total?: number;
  error?: string;
}

interface JobState extends Partial<Seen> {
  done: number;
  over: boolean;
  following: boolean;
  stream: StreamStatus;
  problem?: unknown;
}

const terminal = (s: JobStatus | undefined) => s === "succeeded" || s === "failed";
const order: (JobStatus | undefined)[] = [undefined, "queued", "running", "succeeded", "failed"];
// A job only moves forward, so of what the log, the record and the caller
// say, the furthest along is the truth; the others are just older.
const furthest = (...s: (JobStatus | undefined)[]) => s.reduce<JobStatus | undefined>((a, b) => (order.indexOf(b) > order.indexOf(a) ? b : a), undefined);
const count = (n: number) => n.toLocaleString("en-US");

function useJob({ jobId, known, total: size }: Followed, follow: boolean): JobState {
  const qc = useQueryClient();
  const [seen, setSeen] = useState<Seen | null>(null);
  const [stream, setStream] = useState<StreamStatus>({ state: "connecting" });
  // The record (perhaps cached from an earlier look) is asked again each
  // second while something newer says the job ended and the record does not
  // (a replay's answer, or a closed log: the record can lag the log).
  const logClosed = useRef(false);
  const job = $api.useQuery(
    "get",
    "/api/v1/jobs/{id}",
    { params: { path: { id: jobId } } },
    { refetchInterval: (q) => (!terminal(q.state.data?.status) && (logClosed.current || terminal(known) || terminal(seen?.status)) ? 1000 : false) },
  );
  const view = job.data;
  const status = furthest(seen?.status, view?.status, known);
  const over = terminal(status);
  const refetch = useRef(job.refetch);
  refetch.current = job.refetch;

  useEffect(() => {
    if (over || !follow) return;
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
  }, [jobId, over, follow]);

  // A job that ended changes the jobs list.
  useEffect(() => {
    if (over) void qc.invalidateQueries({ queryKey: ["get", "/api/v1/jobs"] });
  }, [over, qc]);

  const total = seen?.total ?? view?.items_total ?? size;
  const done = status === "succeeded" ? (total ?? 0) : Math.max(seen?.done ?? 0, view?.items_done ?? 0);
  return { status, done, total, error: seen?.error ?? view?.error, over, following: follow && !over, stream, problem: job.isError && !seen ? job.error : undefined };
}

// Follow is one job's watcher: it reports the job's state to the progress
// that sums them, and shows nothing itself.
function Follow({ job, follow, report }: { job: Followed; follow: boolean; report: (id: string, s: JobState) => void }) {
  const s = useJob(job, follow);
  const { status, done, total, error, over, following, stream, problem } = s;
  useEffect(() => report(job.jobId, s), [report, job.jobId, status, done, total, error, over, following, stream, problem]);
  return null;
}

/** combine sums jobs' states: over when every one is, failed when any failed. */
export function combine(states: readonly (Pick<JobState, "status" | "done" | "total" | "error"> | undefined)[]) {
  const ss = states.map((s) => s?.status);
  const status: JobStatus | undefined = ss.every(terminal)
    ? ss.includes("failed")
      ? "failed"
      : "succeeded"
    : ss.every((s) => s === "queued")
      ? "queued"
      : ss.some((s) => s !== undefined && s !== "queued")
        ? "running"
        : undefined;
  let done = 0;
  let total: number | undefined = 0;
  for (const s of states) {
    done += s?.done ?? 0;
    total = s?.total === undefined || total === undefined ? undefined : total + s.total;
  }
  return { status, done, total, error: states.find((s) => s?.error)?.error };
}

export function JobProgress({ jobs }: { jobs: readonly Followed[] }) {
  const [states, setStates] = useState<Record<string, JobState>>({});
  const report = useCallback((id: string, s: JobState) => setStates((m) => ({ ...m, [id]: s })), []);
  const mine = jobs.map((j) => states[j.jobId]);
  const { status, done, total, error } = combine(mine);
  const next = jobs.find((j) => !states[j.jobId]?.over)?.jobId;
  const live = mine.filter((s) => s?.following);
  const notice = live.find((s) => s?.stream.state !== "open") ?? live[0];
  const problem = mine.find((s) => s?.problem)?.problem;

  let text: string;
  switch (status) {
    case "succeeded":
      text = total !== undefined ? `succeeded: ${count(total)} items stored` : "succeeded";
      break;
    case "failed":
      text = `failed: ${error ?? "no reason given"} (${count(done)} items stored)`;
      break;
    case "running":
      text = total !== undefined ? `running: ${count(done)} of ${count(total)}` : "running";
      break;
    case "queued":
      text = "queued";
      break;
    default:
      text = "waiting for the job…";
  }

  return (
    <div className="job-progress stack" data-testid="job-progress">
      {jobs.map((j) => (
        <Follow key={j.jobId} job={j} follow={j.jobId === next} report={report} />
      ))}
      <progress max={total || 1} value={status === "succeeded" ? total || 1 : done} aria-label="Job progress" />
      <p role="status" aria-live="polite" data-testid="job-status" data-status={status ?? ""}>
        {text}
      </p>
      {notice && <StreamNotice status={notice.stream} what="progress view" testId="job-stream-status" />}
      {problem !== undefined && <ErrorNotice error={problem} />}
    </div>
  );
}
