// Turns what a person gives the ingest page into the batch the API takes:
// pasted notes (one per line) or a JSON batch file. The server validates the
// batch; these only shape it, and refuse what could not be a batch at all.
import type { IngestItem, IngestRequest } from "./types";

/** parseTags reads "a, b,,c, a" as ["a", "b", "c"]: trimmed, no blanks, each once. */
export function parseTags(s: string): string[] {
  const out: string[] = [];
  for (const raw of s.split(",")) {
    const t = raw.trim();
    if (t !== "" && !out.includes(t)) out.push(t);
  }
  return out;
}

/** notesToItems makes one item per line that is not blank, each with the tags given. */
export function notesToItems(text: string, tags: readonly string[] = []): IngestItem[] {
  const items: IngestItem[] = [];
  for (const line of text.split(/\r?\n/)) {
    const t = line.trim();
    if (t === "") continue;
    items.push(tags.length > 0 ? { text: t, tags: [...tags] } : { text: t });
  }
  return items;
}

export type BatchParse = { ok: true; body: IngestRequest } | { ok: false; message: string };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * parseBatchFile reads a JSON batch: either a whole batch ({project, items,
 * ingest_id?}) or an array of items, which goes to `project`. A batch without
 * a project takes `project` too. Everything else is left as written, for the
 * server to judge.
 */
export function parseBatchFile(json: string, project: string): BatchParse {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    return { ok: false, message: "the file is not JSON" };
  }
  if (Array.isArray(v)) {
    if (project.trim() === "") return { ok: false, message: "the file is a list of items: name their project" };
    return { ok: true, body: { project: project.trim(), items: v as IngestItem[] } };
  }
  if (isObject(v) && Array.isArray(v.items)) {
    if (v.project === undefined) {
      if (project.trim() === "") return { ok: false, message: "the batch names no project: name one" };
      return { ok: true, body: { ...(v as unknown as IngestRequest), project: project.trim() } };
    }
    return { ok: true, body: v as unknown as IngestRequest };
  }
  return { ok: false, message: "the file is neither a batch ({project, items}) nor a list of items" };
}
