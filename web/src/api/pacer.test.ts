import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { operations } from "./budgets";
import { createBrainClient, holdNoticeMs, LocalRateLimitError } from "./client";
import { budgetsFor, operationOf, parseRateLimit, streamCap } from "./pacer";

const T0 = 1_000_000;

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

// The session budget of get-me, as the spec declares it.
const session = budgetsFor(operations["get-me"], "session");

function recorder(headers: () => Record<string, string> = () => ({})) {
  const at: number[] = [];
  const fetch = async (_req: Request) => {
    at.push(Date.now() - T0);
    return new Response("{}", { status: 200, headers: { "Content-Type": "application/json", ...headers() } });
  };
  return { at, fetch };
}

// fakeServer refuses like brain does: one token bucket of the given size
// and rate, 429 with Retry-After once it is empty, RateLimit on each reply.
function fakeServer(policy: string, limit: number, windowS: number, burst: number) {
  let tokens = burst;
  let last = Date.now();
  const seen = { ok: 0, limited: 0, lastAt: 0 };
  const fetch = async (_req: Request) => {
    const now = Date.now();
    seen.lastAt = now;
    tokens = Math.min(burst, tokens + ((now - last) * limit) / (windowS * 1000));
    last = now;
    if (tokens < 1) {
      seen.limited++;
      const ra = Math.ceil(((1 - tokens) * windowS) / limit);
      return new Response('{"code":"rate-limited","message":"busy","details":{}}', {
        status: 429,
        headers: { "Retry-After": String(ra), RateLimit: `"${policy}";r=0;t=${ra}` },
      });
    }
    tokens -= 1;
    seen.ok++;
    return new Response("{}", {
      status: 200,
      headers: { RateLimit: `"${policy}";r=${Math.floor(tokens)};t=1`, "RateLimit-Policy": `"${policy}";q=${limit};w=${windowS}` },
    });
  };
  return { seen, fetch };
}

describe("budgets from the spec", () => {
  it("gives each operation the budgets of the caller's plane", () => {
    expect(session).toEqual([{ plane: "session", policy: "session", limit: 120, window_s: 60, burst: 60 }]);
    expect(budgetsFor(operations["get-me"], "apikey").map((b) => b.policy)).toEqual(["apikey"]);
    // A stream's opens draw from the stream plane's open budgets, whoever opens it.
    expect(budgetsFor(operations["follow-events"], "apikey").map((b) => b.policy)).toEqual(["stream-opens", "stream-opens-per-user"]);
    // API keys may not manage keys: that entry is not a budget of theirs.
    expect(budgetsFor(operations["list-api-keys"], "apikey")).toEqual([]);
    // Login draws from the ip plane whoever calls it.
    expect(budgetsFor(operations["login"], "session").map((b) => b.policy)).toEqual(["ip"]);
    expect(streamCap()).toBe(16);
  });

  it("finds the operation a request calls", () => {
    expect(operationOf("GET", "http://h/api/v1/auth/me")).toBe("get-me");
    expect(operationOf("GET", "http://h/prefix/api/v1/apikeys")).toBe("list-api-keys");
    expect(operationOf("DELETE", "http://h/api/v1/apikeys/k_1")).toBe("delete-api-key");
    expect(operationOf("POST", "http://h/api/v1/auth/login")).toBe("login");
    expect(operationOf("GET", "http://h/api/v1/nope")).toBeUndefined();
  });

  it("reads a RateLimit header", () => {
    expect(parseRateLimit('"session";r=57;t=12, "stream-opens";r=0;t=1')).toEqual([
      { policy: "session", r: 57, t: 12 },
      { policy: "stream-opens", r: 0, t: 1 },
    ]);
  });
});

describe("pacing", () => {
  it("sends the burst at once, then one request per refill interval", async () => {
    const b = session[0]!;
    const api = recorder();
    const c = createBrainClient({ baseUrl: "http://h", fetch: api.fetch });
    const all = Array.from({ length: b.burst + 2 }, () => c.GET("/api/v1/auth/me"));
    await vi.advanceTimersByTimeAsync(0);
    expect(api.at).toHaveLength(b.burst);
    const interval = (b.window_s * 1000) / b.limit; // 500 ms
    await vi.advanceTimersByTimeAsync(interval - 1);
    expect(api.at).toHaveLength(b.burst);
    await vi.advanceTimersByTimeAsync(1);
    expect(api.at).toHaveLength(b.burst + 1);
    await vi.advanceTimersByTimeAsync(interval);
    await Promise.all(all);
    expect(api.at.slice(b.burst)).toEqual([interval, 2 * interval]);
  });

  it("paces an API key by its own plane's budgets", async () => {
    const b = budgetsFor(operations["get-me"], "apikey")[0]!;
    const api = recorder();
    const c = createBrainClient({ baseUrl: "http://h", apiKey: "brk_x", fetch: api.fetch });
    const all = Array.from({ length: b.burst + 1 }, () => c.GET("/api/v1/auth/me"));
    const interval = (b.window_s * 1000) / b.limit;
    await vi.advanceTimersByTimeAsync(interval - 1);
    expect(api.at).toHaveLength(b.burst);
    await vi.advanceTimersByTimeAsync(1);
    await Promise.all(all);
    expect(api.at[b.burst]).toBe(interval);
    expect(c.pacer.tokens("session")).toBeUndefined();
  });

  it("takes the remaining quota the RateLimit header reports", async () => {
    let header = '"session";r=0;t=30';
    const api = recorder(() => ({ RateLimit: header }));
    const c = createBrainClient({ baseUrl: "http://h", fetch: api.fetch });
    await c.GET("/api/v1/auth/me");
    expect(c.pacer.tokens("session")).toBe(0); // the spec's 59 corrected down
    const next = c.GET("/api/v1/auth/me");
    await vi.advanceTimersByTimeAsync(499);
    expect(api.at).toHaveLength(1);
    header = '"session";r=40;t=10';
    await vi.advanceTimersByTimeAsync(1);
    await next;
    expect(api.at).toEqual([0, 500]);
    expect(c.pacer.tokens("session")).toBe(40); // and up again
  });

  it("fails fast with the rate-limited envelope when asked to", async () => {
    const api = recorder(() => ({ RateLimit: '"session";r=0;t=30' }));
    const c = createBrainClient({ baseUrl: "http://h", fetch: api.fetch, pacing: "fail-fast" });
    await c.GET("/api/v1/auth/me");
    const err = await c.GET("/api/v1/auth/me").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LocalRateLimitError);
    const env = (err as LocalRateLimitError).envelope;
    expect(env.code).toBe("rate-limited");
    expect(env.details).toEqual({ scope: "session", policy: "session", limit: 120, window_s: 60, retry_after_s: 1 });
    expect(api.at).toHaveLength(1);
  });

  it("keeps a client under a server's budget: no 429, in the time the budget allows", async () => {
    const b = session[0]!;
    const n = b.burst + 40;
    const paced = fakeServer("session", b.limit, b.window_s, b.burst);
    const c = createBrainClient({ baseUrl: "http://h", fetch: paced.fetch, retry: { maxAttempts: 1 } });
    const all = Promise.all(Array.from({ length: n }, () => c.GET("/api/v1/auth/me")));
    await vi.advanceTimersByTimeAsync(60_000);
    await all;
    expect(paced.seen).toMatchObject({ ok: n, limited: 0 });
    // The budget allows the burst at once and then limit per window_s.
    const allowed = ((n - b.burst) * b.window_s * 1000) / b.limit;
    const took = paced.seen.lastAt - T0;
    expect(took).toBeGreaterThanOrEqual(allowed);
    expect(took).toBeLessThanOrEqual(allowed * 1.2);

    // The same load unpaced gets refusals.
    const unpaced = fakeServer("session", b.limit, b.window_s, b.burst);
    const u = createBrainClient({ baseUrl: "http://h", fetch: unpaced.fetch, pacing: "off", retry: { maxAttempts: 1 } });
    await Promise.all(Array.from({ length: n }, () => u.GET("/api/v1/auth/me")));
    expect(unpaced.seen.limited).toBe(n - b.burst);
  });
});

describe("what the page is told of a hold", () => {
  // One answer says the session budget is spent and refills 20 a minute:
  // the next request is held 3 s, nothing sent meanwhile.
  const spent = { RateLimit: '"session";r=0;t=3', "RateLimit-Policy": '"session";q=20;w=60' };

  it("onBusy tells of a hold of a second or more as the caller's own, then null once the request is sent", async () => {
    const api = recorder(() => spent);
    const c = createBrainClient({ baseUrl: "http://h", fetch: api.fetch });
    const seen: (string | null)[] = [];
    c.onBusy((b) => seen.push(b ? `${b.status} ${b.scope}/${b.policy} held=${b.held} until +${b.until - T0}` : null));
    await c.GET("/api/v1/auth/me");
    const next = c.GET("/api/v1/auth/me");
    await vi.advanceTimersByTimeAsync(2999);
    expect(api.at).toEqual([0]);
    expect(seen).toEqual(["429 session/session held=true until +3000"]);
    await vi.advanceTimersByTimeAsync(1);
    await next;
    expect(api.at).toEqual([0, 3000]);
    expect(seen).toEqual(["429 session/session held=true until +3000", null]);
  });

  it("onBusy is not told of a hold shorter than holdNoticeMs: it would only flash", async () => {
    const b = session[0]!;
    const api = recorder();
    const c = createBrainClient({ baseUrl: "http://h", fetch: api.fetch });
    const seen: unknown[] = [];
    c.onBusy((x) => seen.push(x));
    const all = Array.from({ length: b.burst + 1 }, () => c.GET("/api/v1/auth/me"));
    await vi.advanceTimersByTimeAsync((b.window_s * 1000) / b.limit); // held 500 ms
    await Promise.all(all);
    expect(api.at).toHaveLength(b.burst + 1);
    expect(holdNoticeMs).toBeGreaterThan(500);
    expect(seen).toEqual([]);
  });
});

describe("what the page is told of a queue", () => {
  it("onBusy tells of a request queued behind others once it has waited holdNoticeMs in all, though no single hold is that long", async () => {
    const b = session[0]!;
    const api = recorder();
    const c = createBrainClient({ baseUrl: "http://h", fetch: api.fetch });
    const seen: { since: number; until: number }[] = [];
    c.onBusy((x) => x && seen.push({ since: T0, until: x.until }));
    // The burst and four more: the last is held 0.5 s four times over.
    const all = Array.from({ length: b.burst + 4 }, () => c.GET("/api/v1/auth/me"));
    await vi.advanceTimersByTimeAsync(4 * ((b.window_s * 1000) / b.limit));
    await Promise.all(all);
    expect(api.at).toHaveLength(b.burst + 4);
    expect(seen.length).toBeGreaterThan(0);
    for (const x of seen) expect(x.until - x.since).toBeGreaterThanOrEqual(holdNoticeMs);
  });
});

describe("a server whose budget is not the spec's", () => {
  it("takes its rate from RateLimit-Policy and its burst from what it reports left: no 429, even after idle", async () => {
    // The spec says 120 per minute, burst 60; this server 20 per minute, burst 3.
    const server = fakeServer("session", 20, 60, 3);
    const c = createBrainClient({ baseUrl: "http://h", fetch: server.fetch, retry: { maxAttempts: 1 } });
    const first = c.GET("/api/v1/auth/me"); // one alone: nothing is known of the server before its answer
    await vi.advanceTimersByTimeAsync(0);
    await first;
    const rest = Promise.all(Array.from({ length: 9 }, () => c.GET("/api/v1/auth/me")));
    await vi.advanceTimersByTimeAsync(60_000);
    await rest;
    expect(server.seen).toMatchObject({ ok: 10, limited: 0 });
    // Burst 3, then one each 3 s: the 10th goes 21 s after the first.
    expect(server.seen.lastAt - T0).toBeGreaterThanOrEqual(21_000);
    expect(server.seen.lastAt - T0).toBeLessThanOrEqual(21_000 * 1.2);

    // Back from an hour idle, the client sends the server's burst, not the spec's.
    await vi.advanceTimersByTimeAsync(3_600_000);
    const again = Promise.all(Array.from({ length: 6 }, () => c.GET("/api/v1/auth/me")));
    await vi.advanceTimersByTimeAsync(60_000);
    await again;
    expect(server.seen).toMatchObject({ ok: 16, limited: 0 });
  });
});

describe("answers out of order", () => {
  it("an older request's answer never raises what a newer one reported", async () => {
    // Two requests in flight; the server counted 5 left after the first and
    // 4 after the second, but the second's answer arrives first.
    const gates: ((r: Response) => void)[] = [];
    const fetch = (_req: Request) => new Promise<Response>((resolve) => gates.push(resolve));
    const c = createBrainClient({ baseUrl: "http://h", fetch, retry: { maxAttempts: 1 } });
    const a = c.GET("/api/v1/auth/me");
    const b = c.GET("/api/v1/auth/me");
    await vi.advanceTimersByTimeAsync(0);
    expect(gates).toHaveLength(2);
    const answer = (r: number) => new Response("{}", { status: 200, headers: { RateLimit: `"session";r=${r};t=1` } });
    gates[1]!(answer(4));
    await b;
    gates[0]!(answer(5));
    await a;
    expect(c.pacer.tokens("session")).toBeLessThanOrEqual(4); // 5 would let a request through that the server refuses
  });

  it("a newer request's answer never raises what an older one reported while others are in flight", async () => {
    // Three requests in flight; the server decided the second before the
    // first (2 left after the second, 1 after the first), and the answers
    // arrive in the order sent: the second's 2, with one still in flight,
    // is older than the first's 1.
    const gates: ((r: Response) => void)[] = [];
    const fetch = (_req: Request) => new Promise<Response>((resolve) => gates.push(resolve));
    const c = createBrainClient({ baseUrl: "http://h", fetch, retry: { maxAttempts: 1 } });
    const sent = [c.GET("/api/v1/auth/me"), c.GET("/api/v1/auth/me"), c.GET("/api/v1/auth/me")];
    await vi.advanceTimersByTimeAsync(0);
    expect(gates).toHaveLength(3);
    const answer = (r: number) => new Response("{}", { status: 200, headers: { RateLimit: `"session";r=${r};t=1` } });
    gates[0]!(answer(1));
    await sent[0];
    expect(c.pacer.tokens("session")).toBe(0); // 1 left, less the two in flight
    gates[1]!(answer(2));
    await sent[1];
    expect(c.pacer.tokens("session")).toBe(0); // 2 - 1 in flight would be 1: a request the server refuses
    gates[2]!(answer(0));
    await sent[2];
    expect(c.pacer.tokens("session")).toBe(0); // none in flight: the fewest any answer reported
  });
});

describe("stream slots", () => {
  it("refuses a 17th stream locally and admits one again after a release", () => {
    const c = createBrainClient({ baseUrl: "http://h", fetch: recorder().fetch });
    const releases = Array.from({ length: 16 }, () => c.acquireStream());
    expect(c.pacer.openStreams()).toBe(16);
    let err: unknown;
    try {
      c.acquireStream();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LocalRateLimitError);
    expect((err as LocalRateLimitError).envelope.details).toMatchObject({ scope: "stream", policy: "streams", limit: 16 });
    releases[0]!();
    releases[0]!(); // a second release frees nothing more
    expect(c.pacer.openStreams()).toBe(15);
    c.acquireStream();
    expect(() => c.acquireStream()).toThrow(LocalRateLimitError);
  });
});
