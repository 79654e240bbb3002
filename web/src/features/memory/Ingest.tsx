// The ingest page: notes pasted one per line (with a project and tags) or a
// JSON batch file, sent to POST /api/v1/memory/ingest (a large one as
// several batches, one after another); the answers shown as they are (a new
// job, or a batch accepted before), then the jobs' progress as one. The
// outcome is scrolled into view and focused, below the forms.
import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { useMutation } from "@tanstack/react-query";
import { client } from "../../app/api";
import { ErrorNotice } from "../../app/ErrorNotice";
import { checkItems, limits, notesToItems, parseBatchFile, parseTags, splitBatch } from "./notes";
import { href } from "../../app/router";
import { JobProgress } from "./JobProgress";
import type { IngestOutput, IngestRequest } from "./types";

// Each batch is sent once its predecessor was accepted; the first refusal
// stops the rest, and is kept beside those accepted (sending the same again
// replays them).
async function sendAll(batches: readonly IngestRequest[]): Promise<{ outs: IngestOutput[]; refused?: unknown }> {
  const outs: IngestOutput[] = [];
  for (const body of batches) {
    const r = await client.POST("/api/v1/memory/ingest", { body }).catch((error: unknown) => ({ data: undefined, error }));
    if (r.error !== undefined) return { outs, refused: r.error };
    outs.push(r.data as IngestOutput);
  }
  return { outs };
}

const count = (n: number) => n.toLocaleString("en-US");

export function Ingest() {
  const [project, setProject] = useState("");
  const [tags, setTags] = useState("");
  const [notes, setNotes] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const [sent, setSent] = useState<IngestRequest[]>([]);
  const file = useRef<HTMLInputElement>(null);
  const outcome = useRef<HTMLDivElement>(null);
  const ingest = useMutation({ mutationFn: sendAll });
  const items = sent.reduce((n, b) => n + b.items.length, 0);

  // Whatever the last press led to (a refusal, the sending, the answer) is
  // below the forms: brought into view and focused, so that keyboard and
  // screen-reader users are taken to it too.
  useEffect(() => {
    if (ingest.isIdle && !problem) return;
    outcome.current?.scrollIntoView({ block: "nearest" });
    outcome.current?.focus({ preventScroll: true });
  }, [ingest.status, ingest.isIdle, problem]);

  function refuse(message: string) {
    ingest.reset();
    setProblem(message);
  }

  function send(body: IngestRequest) {
    const tooBig = checkItems(body.items);
    if (tooBig) return refuse(tooBig);
    const batches = splitBatch(body);
    if (batches.length === 0) return refuse("the batch has no items");
    // Parts of one batch would share its key, which names one content only.
    if (batches.length > 1 && body.ingest_id !== undefined)
      return refuse(`the batch has its own ingest_id and is too large for one request (at most ${count(limits.items)} items): give each part its own ingest_id`);
    setProblem(null);
    setSent(batches);
    ingest.mutate(batches);
  }

  function submitNotes(ev: FormEvent) {
    ev.preventDefault();
    const items = notesToItems(notes, parseTags(tags));
    if (project.trim() === "") return refuse("name the project the notes belong to");
    if (items.length === 0) return refuse("write at least one note");
    send({ project: project.trim(), items });
  }

  async function submitFile(ev: FormEvent) {
    ev.preventDefault();
    const f = file.current?.files?.[0];
    if (!f) return refuse("choose a JSON file");
    let text: string;
    try {
      text = await f.text();
    } catch (e) {
      return refuse(`the file could not be read: ${e instanceof Error ? e.message : String(e)}`);
    }
    const parsed = parseBatchFile(text, project);
    if (!parsed.ok) return refuse(parsed.message);
    send(parsed.body);
  }

  // Ctrl+Enter (or ⌘+Enter) sends the notes from the text area, where Enter
  // starts a new line.
  function onNotesKey(ev: KeyboardEvent<HTMLTextAreaElement>) {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      ev.currentTarget.form?.requestSubmit();
    }
  }

  return (
    <section className="stack">
      <h1 tabIndex={-1}>Ingest</h1>
      <form className="card stack" onSubmit={submitNotes} aria-label="Paste notes">
        <h2>Paste notes</h2>
        <label>
          Project
          <input name="project" required maxLength={128} value={project} onChange={(e) => setProject(e.target.value)} data-testid="ingest-project" />
        </label>
        <label>
          Tags <span className="muted">(optional, comma-separated, given to every note)</span>
          <input name="tags" value={tags} onChange={(e) => setTags(e.target.value)} data-testid="ingest-tags" />
        </label>
        <label>
          Notes, one per line <span className="muted">(Ctrl+Enter sends)</span>
          <textarea name="notes" rows={8} value={notes} onChange={(e) => setNotes(e.target.value)} onKeyDown={onNotesKey} data-testid="ingest-notes" />
        </label>
        <button type="submit" disabled={ingest.isPending} data-testid="ingest-submit">
          Ingest notes
        </button>
      </form>

      <form className="card stack" onSubmit={(e) => void submitFile(e)} aria-label="Upload a JSON batch">
        <h2>Or upload a JSON batch</h2>
        <p className="muted">
          A batch <code>{"{project, items: [{text, kind?, skill?, tags?, occurred_at?}]}"}</code>, or a list of items for the project named above.
        </p>
        <label>
          Batch file
          <input ref={file} type="file" accept="application/json,.json" data-testid="ingest-file" />
        </label>
        <button type="submit" disabled={ingest.isPending} data-testid="ingest-file-submit">
          Ingest file
        </button>
      </form>

      {/* A margin when scrolled into view, so that it does not touch the window's edge. */}
      <div ref={outcome} tabIndex={-1} className="stack" style={{ scrollMargin: "1rem" }} data-testid="ingest-outcome">
        {problem && (
          <p className="notice" role="alert" data-testid="ingest-problem">
            {problem}
          </p>
        )}
        {ingest.isPending && (
          <p role="status">
            Sending {count(items)} items{sent.length > 1 ? ` in ${sent.length} batches` : ""}…
          </p>
        )}
        {ingest.isSuccess && ingest.data.outs.length > 0 && <Accepted outs={ingest.data.outs} sent={sent} />}
        {ingest.isSuccess && ingest.data.refused !== undefined && <Refused refused={ingest.data.refused} at={ingest.data.outs.length} sent={sent} />}
      </div>
    </section>
  );
}

// Refused says which batch was refused and which notes it held (a problem's
// location, body.items[i], counts within that batch), then why.
function Refused({ refused, at, sent }: { refused: unknown; at: number; sent: IngestRequest[] }) {
  const first = sent.slice(0, at).reduce((n, b) => n + b.items.length, 0) + 1;
  return (
    <>
      {sent.length > 1 && (
        <p data-testid="ingest-refused-batch">
          Batch {at + 1} of {sent.length} (notes {count(first)}–{count(first + (sent[at]?.items.length ?? 1) - 1)}) was not accepted
          {at > 0 ? `; the ${at === 1 ? "one" : at} before it ${at === 1 ? "was" : "were"}, and ${at === 1 ? "is" : "are"} shown above` : ""}:
        </p>
      )}
      <ErrorNotice error={refused} testId="ingest-errors" />
      {sent.length > 1 && <p className="muted">Sending the same again is safe: batches already accepted are not queued twice.</p>}
    </>
  );
}

function Accepted({ outs, sent }: { outs: IngestOutput[]; sent: IngestRequest[] }) {
  const jobs = outs.map((o, i) => ({ jobId: o.job_id, known: o.status, total: sent[i]?.items.length }));
  return (
    <div className="card stack" data-testid="ingest-result" data-replayed={outs.every((o) => o.replayed)}>
      {outs.length > 1 && <p>{count(jobs.reduce((n, j) => n + (j.total ?? 0), 0))} items, sent in {outs.length} batches:</p>}
      {outs.map((out, i) => (
        <div key={out.job_id} data-testid="ingest-batch" data-job={out.job_id} data-replayed={out.replayed}>
          {out.replayed ? (
            <p>
              {outs.length > 1 ? `Batch ${i + 1} was` : "This batch was"} accepted before, so nothing new was queued: it is the same job, <a href={href("jobs", out.job_id)}>{out.job_id}</a>, now {out.status}.
            </p>
          ) : (
            <p>
              {outs.length > 1 ? `Batch ${i + 1}, ` : "Accepted "}
              {count(jobs[i]?.total ?? 0)} items: job <a href={href("jobs", out.job_id)}>{out.job_id}</a>.
            </p>
          )}
          <p className="muted small">
            Ingest id <code className="wrap">{out.ingest_id}</code>
          </p>
        </div>
      ))}
      <JobProgress jobs={jobs} />
    </div>
  );
}
