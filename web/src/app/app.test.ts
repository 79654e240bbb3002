// Unit tests of the dashboard's pure parts: countdowns, the live chart's
// window and gauges, the declared budgets and the hash routes.
import { describe, expect, it } from "vitest";
import { formatWait, ownLimit, secondsLeft, waitWords } from "./countdown";
import { appendSnapshot, emptyColumns, humanise, type LiveSample } from "./liveSeries";
import { declaredBudgets, describeBudget, projectReport } from "./budgets";
import { href, match, parseHash } from "./router";
import { routes } from "./App";

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

describe("whose limit a wait is, in words", () => {
  it("is the caller's own for its session, key, streams and login back-off, refused or held by the pacer", () => {
    for (const scope of ["session", "apikey", "stream", "login"]) {
      expect(ownLimit({ scope }), scope).toBe(true);
      expect(ownLimit({ scope, held: true }), `${scope} held`).toBe(true);
    }
    expect(ownLimit({ held: true })).toBe(true);
  });
  it("is brain's for a 503 (no scope) and a budget shared with others (ip), held for or refused", () => {
    expect(ownLimit({})).toBe(false);
    expect(ownLimit({ scope: "ip" })).toBe(false);
    expect(ownLimit({ scope: "ip", held: true })).toBe(false);
  });
  it("has one string per case", () => {
    expect(waitWords.retrying(true, "3 s")).toBe("You have used your requests for now — more in 3 s");
    expect(waitWords.retrying(false, "3 s")).toBe("brain is busy — retrying in 3 s");
    expect(waitWords.tryAgain(true, "3 s")).toBe("You have used your requests for now — more in 3 s");
    expect(waitWords.tryAgain(false, "3 s")).toBe("brain is busy — try again in 3 s");
    expect(waitWords.ready(true)).toBe("Your requests are back — try again now");
    expect(waitWords.ready(false)).toBe("brain is ready again — try again now");
    expect(waitWords.loginWait(true, "3 s")).toBe("Too many tries for now — you can log in again in 3 s");
    expect(waitWords.loginWait(false, "3 s")).toBe("brain is busy — try again in 3 s");
    expect(waitWords.loginReady(true)).toBe("You can log in again now");
    expect(waitWords.loginReady(false)).toBe("brain is ready again — you can log in now");
  });
});

describe("live series", () => {
  const snap = (sec: number, rps = sec, gauges: Record<string, number> = { depth: 3 }): LiveSample => ({
    at: new Date(sec * 1000).toISOString(),
    requests_per_s: rps,
    limited_per_s: 0.5,
    open_streams: 2,
    gauges,
  });
  it("appends columns in order and keeps the last window", () => {
    let c = emptyColumns();
    for (let s = 1000; s <= 1130; s++) c = appendSnapshot(c, snap(s), 120);
    const [xs, rps, limited, streams, depth] = c.data;
    expect(xs[0]).toBe(1010);
    expect(xs.at(-1)).toBe(1130);
    expect(xs).toHaveLength(121);
    expect(rps!.at(-1)).toBe(1130);
    expect(limited!.at(-1)).toBe(0.5);
    expect(streams!.at(-1)).toBe(2);
    expect(c.gauges).toEqual(["depth"]);
    expect(depth).toHaveLength(121);
    expect(depth!.at(-1)).toBe(3);
  });
  it("gives a gauge seen first a column of its own, empty before it", () => {
    let c = appendSnapshot(emptyColumns(), snap(1, 1, {}));
    expect(c.gauges).toEqual([]);
    expect(c.data).toHaveLength(4);
    c = appendSnapshot(c, snap(2, 2, { depth: 5 }));
    c = appendSnapshot(c, snap(3, 3, { depth: 6, backlog: 1 }));
    c = appendSnapshot(c, snap(4, 4, { backlog: 2 }));
    expect(c.gauges).toEqual(["depth", "backlog"]);
    expect(c.data[4]).toEqual([null, 5, 6, null]);
    expect(c.data[5]).toEqual([null, null, 1, 2]);
  });
  it("skips a snapshot that is not newer, and leaves the old arrays alone", () => {
    const a = appendSnapshot(emptyColumns(), snap(5));
    expect(appendSnapshot(a, snap(5, 99))).toBe(a);
    const b = appendSnapshot(a, snap(6));
    expect(a.data[0]).toEqual([5]);
    expect(b.data[0]).toEqual([5, 6]);
  });
  it("keeps the five minutes the server sends first, and takes a reconnect's replay once, in order", () => {
    let c = emptyColumns();
    for (let s = 1000; s <= 1400; s++) c = appendSnapshot(c, snap(s));
    expect(c.data[0]).toHaveLength(301);
    expect(c.data[0][0]).toBe(1100);
    // A reconnected stream sends its history again: the snapshots seen are skipped, the new ones added.
    for (let s = 1300; s <= 1405; s++) c = appendSnapshot(c, snap(s, s + 0.5));
    const [xs, rps] = c.data;
    expect(xs).toHaveLength(301);
    expect(xs[0]).toBe(1105);
    expect(xs.every((x, i) => i === 0 || x === xs[i - 1]! + 1)).toBe(true);
    expect(rps!.slice(-7)).toEqual([1399, 1400, 1401.5, 1402.5, 1403.5, 1404.5, 1405.5]);
  });
  it("words a gauge's name", () => {
    expect(humanise("queue_depth")).toBe("Queue depth");
    expect(humanise("open-files")).toBe("Open files");
    expect(humanise("x")).toBe("X");
  });
});

describe("declared budgets", () => {
  it("lists each policy once, with the operations that draw from it", () => {
    const d = declaredBudgets();
    const policies = d.map((x) => x.budget.policy);
    expect(new Set(policies).size).toBe(policies.length);
    expect(d.find((x) => x.budget.policy === "session")?.operations).toContain("get-me");
    expect(d.find((x) => x.budget.policy === "streams")?.operations).toEqual(expect.arrayContaining(["follow-events", "follow-system-live"]));
    expect(d[0]?.budget.plane).toBe("session");
    expect(d.at(-1)?.budget.plane).toBe("login");
  });
  it("describes each kind of budget", () => {
    expect(describeBudget({ plane: "apikey", policy: "uploads", limit: 100, window_s: 3600, burst: 100 })).toBe("100 per h, burst 100");
    expect(describeBudget({ plane: "stream", policy: "streams", concurrent: 16 })).toBe("16 open at once");
    expect(describeBudget({ plane: "login", policy: "login", failures: 5, ip_failures: 20, backoff_s: [1, 900] })).toBe(
      "back-off after 5 failures (20 per IP), 1 s to 15 min",
    );
  });
});

describe("a reported budget, brought to now", () => {
  // 120 per minute (2 a second), burst 60: 57 left, full in 2 s (1.5 s, rounded up).
  const r = { policy: "session", limit: 120, window_s: 60, remaining: 57, reset_s: 2, at: 10_000 };
  it("grows back at the declared rate while the wait shrinks", () => {
    expect(projectReport(r, 10_000, 60)).toEqual({ remaining: 57, resetIn: 2 });
    expect(projectReport(r, 10_600, 60)).toEqual({ remaining: 58, resetIn: 1.4 });
    expect(projectReport(r, 11_000, 60)).toEqual({ remaining: 59, resetIn: 1 });
  });
  it("stops at full: the burst once the wait is over, never more", () => {
    expect(projectReport(r, 11_900, 60).remaining).toBe(60);
    expect(projectReport(r, 12_000, 60)).toEqual({ remaining: 60, resetIn: 0 });
    expect(projectReport(r, 99_000, 60)).toEqual({ remaining: 60, resetIn: 0 });
  });
  it("without a known burst, grows only for the reported wait", () => {
    expect(projectReport(r, 99_000)).toEqual({ remaining: 61, resetIn: 0 });
  });
  it("leaves a cap on open requests, and a report from the future, as reported", () => {
    expect(projectReport({ policy: "streams", limit: 16, remaining: 15, at: 10_000 }, 99_000)).toEqual({ remaining: 15 });
    expect(projectReport(r, 9_000, 60)).toEqual({ remaining: 57, resetIn: 2 });
  });
});

describe("features", () => {
  it("take no route of the dashboard's, nor one of another feature's", () => {
    const paths = routes.map((r) => r.path);
    expect(paths).toContain("keys");
    expect(new Set(paths).size).toBe(paths.length);
  });
});

describe("router", () => {
  it("reads the hash's segments, decoded, and writes them back", () => {
    expect(parseHash("")).toEqual([]);
    expect(parseHash("#/")).toEqual([]);
    expect(parseHash("#/keys")).toEqual(["keys"]);
    expect(parseHash("#/things/")).toEqual(["things"]);
    expect(parseHash("#/things/a%2Fb")).toEqual(["things", "a/b"]);
    expect(parseHash("#/things/100%")).toEqual(["things", "100%"]);
    expect(href("things", "a/b")).toBe("#/things/a%2Fb");
    expect(href()).toBe("#/");
  });
  it("matches a route's segments and takes its parameters", () => {
    expect(match("", [])).toEqual({});
    expect(match("keys", ["keys"])).toEqual({});
    expect(match("things/:id", ["things", "a/b"])).toEqual({ id: "a/b" });
    expect(match("things/:id", parseHash("#/things/a%2Fb"))).toEqual({ id: "a/b" });
  });
  it("matches nothing else", () => {
    expect(match("", ["keys"])).toBeUndefined();
    expect(match("keys", [])).toBeUndefined();
    expect(match("keys", ["keys", "1"])).toBeUndefined();
    expect(match("things/:id", ["things"])).toBeUndefined();
    expect(match("things/:id", ["things", ""])).toBeUndefined();
    expect(match("things/:id", ["other", "1"])).toBeUndefined();
  });
});
