// Unit tests of the dashboard's pure parts: countdowns, notes → items, the
// batch file, snippets, the live chart's window and the declared budgets.
import { describe, expect, it } from "vitest";
import { formatWait, secondsLeft } from "./countdown";
import { notesToItems, parseBatchFile, parseTags } from "./notes";
import { splitSnippet } from "./snippet";
import { appendSnapshot, emptyColumns, type LiveSnapshot } from "./liveSeries";
import { declaredBudgets, describeBudget } from "./budgets";
import { href, parseHash } from "./router";

describe("countdown", () => {
  it("rounds what is left up to whole seconds, never below 0", () => {
    expect(secondsLeft(10_000, 0)).toBe(10);
    expect(secondsLeft(10_000, 9_001)).toBe(1);
    expect(secondsLeft(10_000, 10_000)).toBe(0);
    expect(secondsLeft(10_000, 12_000)).toBe(0);
  });
  it("words seconds and minutes", () => {
    expect(formatWait(0)).toBe("0 s");
    expect(formatWait(59)).toBe("59 s");
    expect(formatWait(60)).toBe("1 min");
    expect(formatWait(125)).toBe("2 min 5 s");
    expect(formatWait(1.2)).toBe("2 s");
  });
});

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

describe("live series", () => {
  const snap = (sec: number, rps = sec): LiveSnapshot => ({
    at: new Date(sec * 1000).toISOString(),
    requests_per_s: rps,
    limited_per_s: 0.5,
    open_streams: 2,
    jobs_queued: 3,
    goroutines: 10,
    heap_bytes: 1,
  });
  it("appends columns in order and keeps the last window", () => {
    let c = emptyColumns();
    for (let s = 1000; s <= 1130; s++) c = appendSnapshot(c, snap(s), 120);
    expect(c[0][0]).toBe(1010);
    expect(c[0].at(-1)).toBe(1130);
    expect(c[0]).toHaveLength(121);
    expect(c[1].at(-1)).toBe(1130);
    expect(c[2].at(-1)).toBe(0.5);
    expect(c[3].at(-1)).toBe(2);
    expect(c[4].at(-1)).toBe(3);
  });
  it("skips a snapshot that is not newer, and leaves the old arrays alone", () => {
    const a = appendSnapshot(emptyColumns(), snap(5));
    expect(appendSnapshot(a, snap(5, 99))).toBe(a);
    const b = appendSnapshot(a, snap(6));
    expect(a[0]).toEqual([5]);
    expect(b[0]).toEqual([5, 6]);
  });
});

describe("declared budgets", () => {
  it("lists each policy once, with the operations that draw from it", () => {
    const d = declaredBudgets();
    const policies = d.map((x) => x.budget.policy);
    expect(new Set(policies).size).toBe(policies.length);
    const ingest = d.find((x) => x.budget.policy === "ingest");
    expect(ingest?.operations).toEqual(["ingest-memory"]);
    expect(d.find((x) => x.budget.policy === "session")?.operations).toContain("list-jobs");
    expect(d[0]?.budget.plane).toBe("session");
    expect(d.at(-1)?.budget.plane).toBe("login");
  });
  it("describes each kind of budget", () => {
    expect(describeBudget({ plane: "apikey", policy: "ingest", limit: 100, window_s: 3600, burst: 100 })).toBe("100 per h, burst 100");
    expect(describeBudget({ plane: "stream", policy: "streams", concurrent: 16 })).toBe("16 open at once");
    expect(describeBudget({ plane: "login", policy: "login", failures: 5, ip_failures: 20, backoff_s: [1, 900] })).toBe(
      "back-off after 5 failures (20 per IP), 1 s to 15 min",
    );
  });
});

describe("router", () => {
  it("reads each page from the hash, and back", () => {
    expect(parseHash("")).toEqual({ page: "overview" });
    expect(parseHash("#/")).toEqual({ page: "overview" });
    expect(parseHash("#/keys")).toEqual({ page: "keys" });
    expect(parseHash("#/jobs/")).toEqual({ page: "jobs" });
    expect(parseHash("#/jobs/a%2Fb")).toEqual({ page: "job", id: "a/b" });
    expect(href({ page: "job", id: "a/b" })).toBe("#/jobs/a%2Fb");
    expect(href({ page: "overview" })).toBe("#/");
  });
  it("says not-found for what is no page", () => {
    expect(parseHash("#/nope")).toEqual({ page: "not-found" });
    expect(parseHash("#/keys/1")).toEqual({ page: "not-found" });
    expect(parseHash("#/jobs/1/log")).toEqual({ page: "not-found" });
  });
});
