// Unit tests of the example's pure parts: notes → items, the batch file,
// the spec's bounds and batches cut to them, jobs' progress summed,
// snippets, and its routes.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { match, parseHash } from "../../app/router";
import { feature } from "./index";
import { combine } from "./JobProgress";
import type { IngestItem } from "./types";
import { checkItems, limits, notesToItems, parseBatchFile, parseTags, splitBatch } from "./notes";
import { splitSnippet } from "./snippet";

describe("notes", () => {
  it("makes one item per line that is not blank, trimmed", () => {
    expect(notesToItems("first\r\n\n  second  \n   \nthird")).toEqual([{ text: "first" }, { text: "second" }, { text: "third" }]);
  });
  it("gives each item its own copy of the tags", () => {
    const items = notesToItems("a\nb", ["x"]);
    expect(items).toEqual([{ text: "a", tags: ["x"] }, { text: "b", tags: ["x"] }]);
    expect(items[0]!.tags).not.toBe(items[1]!.tags);
  });
  it("reads tags trimmed, without blanks or repeats", () => {
    expect(parseTags(" go, retry,, go ,")).toEqual(["go", "retry"]);
    expect(parseTags("")).toEqual([]);
  });
});

describe("batch file", () => {
  it("takes a whole batch as written", () => {
    const r = parseBatchFile('{"project":"p","items":[{"text":"t"}]}', "other");
    expect(r).toEqual({ ok: true, body: { project: "p", items: [{ text: "t" }] } });
  });
  it("puts a list of items in the project named", () => {
    expect(parseBatchFile('[{"text":"t"}]', " p ")).toEqual({ ok: true, body: { project: "p", items: [{ text: "t" }] } });
    expect(parseBatchFile('[{"text":"t"}]', "").ok).toBe(false);
  });
  it("names the project of a batch without one", () => {
    expect(parseBatchFile('{"items":[]}', "p")).toEqual({ ok: true, body: { project: "p", items: [] } });
  });
  it("refuses what is no batch", () => {
    expect(parseBatchFile("{", "p")).toEqual({ ok: false, message: "the file is not JSON" });
    expect(parseBatchFile('{"text":"t"}', "p").ok).toBe(false);
    expect(parseBatchFile("3", "p").ok).toBe(false);
  });
});

describe("the spec's bounds", () => {
  it("are openapi.json's", () => {
    const spec = JSON.parse(readFileSync(new URL("../../../../openapi.json", import.meta.url), "utf8"));
    const batch = spec.components.schemas.IngestRequest.properties.items;
    const item = spec.components.schemas.IngestItem.properties;
    const op = spec.paths["/api/v1/memory/ingest"].post;
    expect(limits).toEqual({
      items: batch.maxItems,
      text: item.text.maxLength,
      tags: item.tags.maxItems,
      tag: item.tags.items.maxLength,
      bodyBytes: Number(/at most [^(]*\((\d+) bytes\)/.exec(op.description)?.[1]),
    });
  });
  it("name the first note past them, before sending", () => {
    expect(checkItems([{ text: "ok" }, { text: "x".repeat(limits.text) }])).toBeNull();
    expect(checkItems([{ text: "ok" }, { text: "x".repeat(limits.text + 1) }])).toBe("note 2 is longer than 65,536 characters: split it in two");
    // Characters, not UTF-16 units: an emoji is one.
    expect(checkItems([{ text: "😀".repeat(limits.text) }])).toBeNull();
    expect(checkItems([{ text: "t", tags: Array.from({ length: limits.tags + 1 }, (_, i) => `t${i}`) }])).toBe("note 1 has more than 32 tags");
    expect(checkItems([{ text: "t", tags: ["x".repeat(limits.tag + 1)] }])).toMatch(/^the tag "x+…" is longer than 64 characters$/);
  });

  it("leave what is no item (null, a number) for the server to refuse in its words", () => {
    expect(checkItems([{ text: "ok" }, null, 3] as unknown as IngestItem[])).toBeNull();
  });
});

describe("batches", () => {
  const body = (n: number, text = (i: number) => `note ${i}`) => ({ project: "p", items: Array.from({ length: n }, (_, i) => ({ text: text(i) })) });

  it("cuts 2,500 notes into batches of at most 1,000, in order", () => {
    const parts = splitBatch(body(2500));
    expect(parts.map((b) => b.items.length)).toEqual([1000, 1000, 500]);
    expect(parts.flatMap((b) => b.items)).toEqual(body(2500).items);
    expect(parts.every((b) => b.project === "p")).toBe(true);
  });
  it("cuts the same notes the same way, so a batch sent again is the same", () => {
    expect(JSON.stringify(splitBatch(body(2000)))).toBe(JSON.stringify(splitBatch(body(2000))));
  });
  it("keeps each batch's JSON within the body limit", () => {
    const big = body(300, (i) => `${i} ${"é".repeat(30_000)}`); // about 60 kB each, 18 MB in all
    const parts = splitBatch(big);
    expect(parts.length).toBe(3);
    for (const p of parts) expect(new TextEncoder().encode(JSON.stringify(p)).length).toBeLessThanOrEqual(limits.bodyBytes);
    expect(parts.flatMap((b) => b.items)).toEqual(big.items);
  });
  it("leaves a batch within bounds whole", () => {
    expect(splitBatch(body(1000))).toEqual([body(1000)]);
    expect(splitBatch(body(0))).toEqual([]);
  });
});

describe("jobs' progress summed", () => {
  it("runs while any runs or some are over, and is over when all are", () => {
    const q = { status: "queued" as const, done: 0, total: 1000 };
    const r = { status: "running" as const, done: 200, total: 1000 };
    const s = { status: "succeeded" as const, done: 1000, total: 1000 };
    const f = { status: "failed" as const, done: 100, total: 1000, error: "gone" };
    expect(combine([q, q])).toEqual({ status: "queued", done: 0, total: 2000, error: undefined });
    expect(combine([s, r])).toEqual({ status: "running", done: 1200, total: 2000, error: undefined });
    expect(combine([s, q]).status).toBe("running");
    expect(combine([s, s])).toEqual({ status: "succeeded", done: 2000, total: 2000, error: undefined });
    expect(combine([s, f])).toEqual({ status: "failed", done: 1100, total: 2000, error: "gone" });
    expect(combine([s, undefined])).toEqual({ status: "running", done: 1000, total: undefined, error: undefined });
    expect(combine([undefined]).status).toBeUndefined();
  });
});

describe("snippet", () => {
  it("marks the words between **", () => {
    expect(splitSnippet("retry with **backoff** and **jitter**…")).toEqual([
      { text: "retry with ", mark: false },
      { text: "backoff", mark: true },
      { text: " and ", mark: false },
      { text: "jitter", mark: true },
      { text: "…", mark: false },
    ]);
  });
  it("keeps an unpaired ** as text", () => {
    expect(splitSnippet("a **b")).toEqual([{ text: "a **b", mark: false }]);
    expect(splitSnippet("**a** b **c")).toEqual([
      { text: "a", mark: true },
      { text: " b **c", mark: false },
    ]);
  });
});

describe("routes", () => {
  const route = (hash: string) => {
    for (const r of feature.routes) {
      const params = match(r.path, parseHash(hash));
      if (params) return { path: r.path, params };
    }
    return undefined;
  };
  it("has a page for each entry of its navigation", () => {
    for (const n of feature.nav) expect(route(`#/${n.path}`), n.path).toBeDefined();
  });
  it("shows a job at #/jobs/<id>, and nothing below it", () => {
    expect(route("#/jobs/a%2Fb")).toEqual({ path: "jobs/:id", params: { id: "a/b" } });
    expect(route("#/jobs/")).toEqual({ path: "jobs", params: {} });
    expect(route("#/jobs/1/log")).toBeUndefined();
  });
});
