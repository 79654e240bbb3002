import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Operation } from "./budgets";
import { createBrainClient, type BrainClientOptions } from "./client";
import { retryable } from "./retry";

interface Sent {
  method: string;
  path: string;
  body: string;
  at: number;
}

// fakeAPI answers each request with the next of replies (the last repeats)
// and records what was sent and when.
function fakeAPI(...replies: (() => Response)[]) {
  const sent: Sent[] = [];
  const fetch = async (req: Request): Promise<Response> => {
    sent.push({ method: req.method, path: new URL(req.url).pathname, body: await req.text(), at: Date.now() });
    const r = replies[Math.min(sent.length - 1, replies.length - 1)]!;
    return r();
  };
  return { sent, fetch };
}

const limited = (retryAfter?: string, status = 429) => () =>
  new Response(
    JSON.stringify({
      code: "rate-limited",
      message: "brain is busy — please retry in a moment.",
      details: { scope: "session", policy: "session", limit: 120, window_s: 60, retry_after_s: Number(retryAfter ?? 1) },
    }),
    { status, headers: { "Content-Type": "application/json", ...(retryAfter ? { "Retry-After": retryAfter } : {}) } },
  );
const ok = () => new Response(JSON.stringify({ items: [], next_cursor: "" }), { status: 200, headers: { "Content-Type": "application/json" } });

function client(fetch: BrainClientOptions["fetch"], retry: BrainClientOptions["retry"] = {}) {
  return createBrainClient({ baseUrl: "http://brain.test", fetch, pacing: "off", retry });
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("retry of 429 and 503", () => {
  it("waits Retry-After, no less, before sending a GET again", async () => {
    const api = fakeAPI(limited("3"), ok);
    const p = client(api.fetch, { random: () => 0 }).GET("/api/v1/auth/me");
    await vi.advanceTimersByTimeAsync(2999);
    expect(api.sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    const { data, error } = await p;
    expect(error).toBeUndefined();
    expect(data).toBeDefined();
    expect(api.sent.map((s) => s.at - 1_000_000)).toEqual([0, 3000]);
  });

  it("adds jitter bounded by a fifth of the wait, and at most 5 s", async () => {
    const api = fakeAPI(limited("3"), limited("100"), ok);
    const p = client(api.fetch, { random: () => 0.999999, maxWaitMs: 1_000_000 }).GET("/api/v1/auth/me");
    await vi.advanceTimersByTimeAsync(3599);
    expect(api.sent).toHaveLength(2); // 3 s + up to 0.6 s
    await vi.advanceTimersByTimeAsync(100_000 + 4998);
    expect(api.sent).toHaveLength(2); // 100 s + up to 5 s, not 20 s
    await vi.advanceTimersByTimeAsync(2);
    expect(api.sent).toHaveLength(3);
    expect((await p).error).toBeUndefined();
  });

  it("gives up after maxAttempts and hands the rate-limited envelope to the caller", async () => {
    const api = fakeAPI(limited("1"));
    const p = client(api.fetch, { maxAttempts: 3, random: () => 0 }).GET("/api/v1/auth/me");
    await vi.advanceTimersByTimeAsync(60_000);
    const { data, error, response } = await p;
    expect(api.sent).toHaveLength(3);
    expect(data).toBeUndefined();
    expect(response.status).toBe(429);
    expect(error?.code).toBe("rate-limited");
    expect(error?.details.policy).toBe("session");
    expect(error?.details.scope).toBe("session");
    expect(error?.details.retry_after_s).toBe(1);
  });

  it("stops before the total wait would pass maxWaitMs", async () => {
    const api = fakeAPI(limited("10"));
    const p = client(api.fetch, { maxAttempts: 100, maxWaitMs: 25_000, random: () => 0 }).GET("/api/v1/auth/me");
    await vi.advanceTimersByTimeAsync(120_000);
    const { error } = await p;
    expect(api.sent.map((s) => s.at - 1_000_000)).toEqual([0, 10_000, 20_000]);
    expect(error?.code).toBe("rate-limited");
  });

  it("never sends another POST or a DELETE twice", async () => {
    const api = fakeAPI(limited("1"));
    const c = client(api.fetch, { random: () => 0 });
    const post = c.POST("/api/v1/apikeys", { body: { name: "ci" } });
    const del = c.DELETE("/api/v1/apikeys/{id}", { params: { path: { id: "k_1" } } });
    const logout = c.POST("/api/v1/auth/logout");
    await vi.advanceTimersByTimeAsync(60_000);
    expect((await post).error?.code).toBe("rate-limited");
    expect((await del).error?.code).toBe("rate-limited");
    expect((await logout).response.status).toBe(429);
    expect(api.sent.map((s) => `${s.method} ${s.path}`).sort()).toEqual([
      "DELETE /api/v1/apikeys/k_1",
      "POST /api/v1/apikeys",
      "POST /api/v1/auth/logout",
    ]);
  });

  it("treats 503 with Retry-After like 429, and returns 503 without it", async () => {
    const api = fakeAPI(limited("2", 503), ok);
    const p = client(api.fetch, { random: () => 0 }).GET("/api/v1/auth/me");
    await vi.advanceTimersByTimeAsync(2000);
    expect((await p).error).toBeUndefined();
    expect(api.sent).toHaveLength(2);

    const bare = fakeAPI(limited(undefined, 503), ok);
    const q = await client(bare.fetch).GET("/api/v1/auth/me");
    expect(q.response.status).toBe(503);
    expect(bare.sent).toHaveLength(1);
  });
});

describe("what is sent again", () => {
  it("a GET or HEAD, and a POST only to an operation the server deduplicates", () => {
    const post = (o: Partial<Operation> = {}): Operation => ({ method: "POST", path: "/api/v1/apikeys", budgets: [], ...o });
    expect(retryable("GET", undefined)).toBe(true);
    expect(retryable("head", undefined)).toBe(true);
    expect(retryable("POST", post({ idempotent: true }))).toBe(true);
    expect(retryable("POST", post())).toBe(false);
    expect(retryable("POST", undefined)).toBe(false);
    expect(retryable("DELETE", post({ method: "DELETE", idempotent: true }))).toBe(false);
    expect(retryable("PUT", post({ method: "PUT", idempotent: true }))).toBe(false);
  });
});

describe("what the client tells the page", () => {
  it("onBusy reports a wait with its envelope's scope and policy, then null once the request went again", async () => {
    const api = fakeAPI(limited("2"), ok);
    const c = client(api.fetch, { random: () => 0 });
    const seen: (string | null)[] = [];
    c.onBusy((b) => seen.push(b ? `${b.status} ${b.scope}/${b.policy} until +${b.until - 1_000_000}` : null));
    const p = c.GET("/api/v1/auth/me");
    await vi.advanceTimersByTimeAsync(1999);
    expect(seen).toEqual(["429 session/session until +2000"]);
    await vi.advanceTimersByTimeAsync(1);
    await p;
    expect(seen).toEqual(["429 session/session until +2000", null]);
  });

  it("onBusy is not told of a refusal it will not retry", async () => {
    const api = fakeAPI(limited("2"));
    const c = client(api.fetch, { random: () => 0 });
    const seen: unknown[] = [];
    c.onBusy((b) => seen.push(b));
    const { error } = await c.POST("/api/v1/apikeys", { body: { name: "k" } });
    expect(error?.code).toBe("rate-limited");
    expect(seen).toEqual([]);
  });

  it("rateLimits keeps what each policy last reported, with RateLimit-Policy's quota and window", async () => {
    const api = fakeAPI(
      () => new Response("{}", { status: 200, headers: { RateLimit: '"session";r=57;t=12', "RateLimit-Policy": '"session";q=120;w=60' } }),
      () => new Response("{}", { status: 200, headers: { RateLimit: '"session";r=56;t=13, "stream-opens";r=9;t=1', "RateLimit-Policy": '"session";q=120;w=60, "stream-opens";q=60;w=60' } }),
    );
    const c = client(api.fetch);
    const told: number[] = [];
    c.onRateLimits((r) => told.push(r.length));
    await c.GET("/api/v1/auth/me");
    await c.GET("/api/v1/auth/me");
    expect(told).toEqual([1, 2]);
    expect(c.rateLimits()).toEqual([
      { policy: "session", remaining: 56, reset_s: 13, limit: 120, window_s: 60, at: 1_000_000 },
      { policy: "stream-opens", remaining: 9, reset_s: 1, limit: 60, window_s: 60, at: 1_000_000 },
    ]);
  });
});
