// Turns what a person gives the ingest page into the batches the API takes:
// pasted notes (one per line) or a JSON batch file, split where the spec's
// bounds say. The server validates each batch; these shape it, and refuse
// in plain words what could not be sent at all.
import type { IngestItem, IngestRequest } from "./types";

/**
 * The spec's bounds on one ingest (openapi.json's IngestRequest and IngestItem,
 * and the body limit in the operation's description; memory.test.ts checks
 * they agree): items in a batch, characters in a note, tags on a note and
 * characters in a tag, bytes in a request body.
 */
export const limits = { items: 1000, text: 65536, tags: 32, tag: 64, bodyBytes: 8388608 } as const;

const count = (n: number) => n.toLocaleString("en-US");
const chars = (s: string, max: number) => s.length > max && [...s].length > max; // code points, as the spec counts

/** checkItems words the first bound of the spec an item passes (items counted from 1), or says null. */
export function checkItems(items: readonly IngestItem[]): string | null {
  for (const [i, it] of items.entries()) {
    const n = `note ${count(i + 1)}`;
    if (typeof it !== "object" || it === null) continue; // for the server to judge, in its words
    if (typeof it.text === "string" && chars(it.text, limits.text)) return `${n} is longer than ${count(limits.text)} characters: split it in two`;
    if (!Array.isArray(it.tags)) continue;
    if (it.tags.length > limits.tags) return `${n} has more than ${limits.tags} tags`;
    const long = it.tags.find((t) => typeof t === "string" && chars(t, limits.tag));
    if (long !== undefined) return `the tag "${long.slice(0, 20)}…" is longer than ${limits.tag} characters`;
  }
  return null;
}

/**
 * splitBatch cuts a batch into batches of at most limits.items items and
 * limits.bodyBytes bytes of JSON, in order. The same batch is always cut the
 * same way, so each part, sent again, is the same batch (the server's
 * idempotency key is the body's hash) and answers the same job.
 */
export function splitBatch(body: IngestRequest): IngestRequest[] {
  const enc = new TextEncoder();
  const bytes = (v: unknown) => enc.encode(JSON.stringify(v)).length;
  const room = limits.bodyBytes - bytes({ ...body, items: [] });
  const out: IngestRequest[] = [];
  let items: IngestItem[] = [];
  let used = 0;
  for (const it of body.items) {
    const n = bytes(it) + 1; // and the comma before the next
    if (items.length === limits.items || (items.length > 0 && used + n > room)) {
      out.push({ ...body, items });
      items = [];
      used = 0;
    }
    items.push(it);
    used += n;
  }
  if (items.length > 0) out.push({ ...body, items });
  return out;
}

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
