// The query page: GET /api/v1/memory/query, the ranked results with their
// snippets (the query's words marked), a page at a time by cursor.
import { useState, type FormEvent } from "react";
import { keepPreviousData } from "@tanstack/react-query";
import { $api } from "../../app/api";
import { ErrorNotice } from "../../app/ErrorNotice";
import { Pager, useCursorPages } from "../../app/Pager";
import { splitSnippet } from "./snippet";
import type { Result } from "./types";

const pageSize = 20;

export function Query() {
  const [q, setQ] = useState("");
  const [project, setProject] = useState("");
  const [asked, setAsked] = useState<{ q: string; project?: string } | null>(null);
  const pages = useCursorPages();
  const res = $api.useQuery(
    "get",
    "/api/v1/memory/query",
    { params: { query: { q: asked?.q ?? "", project: asked?.project, limit: pageSize, cursor: pages.cursor } } },
    { enabled: asked !== null, placeholderData: keepPreviousData },
  );

  function submit(ev: FormEvent) {
    ev.preventDefault();
    if (q.trim() === "") return;
    pages.reset();
    setAsked({ q: q.trim(), project: project.trim() || undefined });
  }

  return (
    <section className="stack">
      <h1 tabIndex={-1}>Query</h1>
      <form className="card stack" role="search" onSubmit={submit} aria-label="Search your notes">
        <label>
          Words to find
          <input type="search" name="q" required maxLength={1024} value={q} onChange={(e) => setQ(e.target.value)} data-testid="query-input" />
        </label>
        <label>
          Project <span className="muted">(optional)</span>
          <input name="project" maxLength={128} value={project} onChange={(e) => setProject(e.target.value)} data-testid="query-project" />
        </label>
        <button type="submit" data-testid="query-submit">
          Search
        </button>
      </form>
      {res.isFetching && <p role="status">Searching…</p>}
      {res.isError && <ErrorNotice error={res.error} testId="query-error" />}
      {res.data && (
        <>
          {res.data.results.length === 0 ? (
            <p data-testid="query-empty">No notes match.</p>
          ) : (
            <ol className="results" data-testid="query-results" aria-label="Results" start={(pages.page - 1) * pageSize + 1} aria-busy={res.isPlaceholderData}>
              {res.data.results.map((r) => (
                <ResultItem key={r.id} r={r} />
              ))}
            </ol>
          )}
          <Pager pages={pages} nextCursor={res.data.next_cursor} busy={res.isPlaceholderData} label="Result pages" />
        </>
      )}
    </section>
  );
}

function ResultItem({ r }: { r: Result }) {
  return (
    <li className="card result" data-testid="query-result">
      <p className="snippet">
        {splitSnippet(r.snippet).map((run, i) => (run.mark ? <mark key={i}>{run.text}</mark> : <span key={i}>{run.text}</span>))}
      </p>
      <p className="meta muted small">
        <span>{r.project}</span>
        <span>{r.kind}</span>
        {r.skill && <span>skill {r.skill}</span>}
        {r.tags.length > 0 && <span>tags {r.tags.join(", ")}</span>}
        <span>{new Date(r.occurred_at).toLocaleString()}</span>
        <span>score {r.score.toFixed(3)}</span>
      </p>
    </li>
  );
}
