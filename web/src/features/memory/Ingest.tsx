// The ingest page: notes pasted one per line (with a project and tags) or a
// JSON batch file, sent to POST /api/v1/memory/ingest; the answer shown as
// it is (a new job, or a batch accepted before), then the job's progress.
import { useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { $api } from "../../app/api";
import { ErrorNotice } from "../../app/ErrorNotice";
import { notesToItems, parseBatchFile, parseTags } from "./notes";
import { href } from "../../app/router";
import { JobProgress } from "./JobProgress";
import type { IngestOutput, IngestRequest } from "./types";

export function Ingest() {
  const [project, setProject] = useState("");
  const [tags, setTags] = useState("");
  const [notes, setNotes] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const [sent, setSent] = useState<{ count: number } | null>(null);
  const file = useRef<HTMLInputElement>(null);
  const ingest = $api.useMutation("post", "/api/v1/memory/ingest");

  function refuse(message: string) {
    ingest.reset();
    setProblem(message);
  }

  function send(body: IngestRequest) {
    setProblem(null);
    setSent({ count: body.items.length });
    ingest.mutate({ body });
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

      {problem && (
        <p className="notice" role="alert" data-testid="ingest-problem">
          {problem}
        </p>
      )}
      {ingest.isPending && <p role="status">Sending {sent?.count ?? ""} items…</p>}
      {ingest.isError && <ErrorNotice error={ingest.error} testId="ingest-errors" />}
      {ingest.isSuccess && <Accepted out={ingest.data} count={sent?.count} />}
    </section>
  );
}

function Accepted({ out, count }: { out: IngestOutput; count: number | undefined }) {
  return (
    <div className="card stack" data-testid="ingest-result" data-replayed={out.replayed}>
      {out.replayed ? (
        <p>
          This batch was accepted before, so nothing new was queued: it is the same job, <a href={href("jobs", out.job_id)}>{out.job_id}</a>, now {out.status}.
        </p>
      ) : (
        <p>
          Accepted{count !== undefined ? ` ${count} items` : ""}: job <a href={href("jobs", out.job_id)}>{out.job_id}</a> is {out.status}.
        </p>
      )}
      <p className="muted small">
        Ingest id <code className="wrap">{out.ingest_id}</code>
      </p>
      <JobProgress key={out.job_id} jobs={[{ jobId: out.job_id, known: out.status, total: count }]} />
    </div>
  );
}
