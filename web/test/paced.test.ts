// The paced client against a real brain: N requests well past a budget's
// burst, through createBrainClient with pacing "delay", draw no 429 and take
// about the time the budget allows; the same N unpaced draw 429s. Both
// planes a client paces are covered: a session (GET /auth/me, the session
// budget, 120/min burst 60) and an API key (GET /memory/skills, its own
// budget "skills", 10/s burst 10). The server runs its defaults, which are
// the spec's, which budgets.ts was generated from (checked first).
import { describe, expect, test } from "vitest";
import { createBrainClient, type BrainClient } from "../src/api/client";
import { operations, type OperationId, type RateBudget } from "../src/api/budgets";
import { useBrain } from "./use-brain";
import { createApiKey, login, withCookie } from "./session";
import { counting, run } from "./load";

type Fetch = (input: Request, init?: RequestInit) => Promise<Response>;

const brain = useBrain();

function budget(op: OperationId, policy: string): RateBudget {
  const b = operations[op].budgets.find((b) => b.policy === policy);
  if (!b || !("limit" in b)) throw new Error(`${op} has no rate budget ${policy}`);
  return b;
}

test("the server runs the budgets the client was generated from", async () => {
  const res = await fetch(`${brain().url}/openapi.json`);
  const spec = (await res.json()) as { paths: Record<string, Record<string, { operationId?: string; "x-rate-limit"?: unknown }>> };
  for (const id of ["get-me", "list-skills"] as const) {
    const op = spec.paths[operations[id].path]?.[operations[id].method.toLowerCase()];
    expect(op?.operationId).toBe(id);
    expect(op?.["x-rate-limit"]).toEqual(operations[id].budgets);
  }
});

interface Case {
  name: string;
  op: OperationId;
  policy: string;
  /** Requests sent: well past the burst, so the pacer has to wait for (n - burst) / rate seconds. */
  n: number;
  /** A client with fetch as its fetch, and a call that returns its status. */
  client(fetch: Fetch, o: { pacing: "delay" | "off"; maxAttempts?: number }): Promise<{ brain: BrainClient; call: () => Promise<number> }>;
}

const cases: Case[] = [
  {
    name: "session",
    op: "get-me",
    policy: "session",
    n: 70,
    async client(fetch, o) {
      // Each login is a new session with a full budget of its own.
      const cookie = await login(brain().url, brain().adminPassword);
      const c = createBrainClient({ baseUrl: brain().url, fetch: withCookie(cookie, fetch), pacing: o.pacing, retry: { maxAttempts: o.maxAttempts } });
      return { brain: c, call: async () => (await c.GET("/api/v1/auth/me")).response.status };
    },
  },
  {
    name: "api key",
    op: "list-skills",
    policy: "skills",
    n: 50,
    async client(fetch, o) {
      // Each key is new, with a full budget of its own.
      const key = await createApiKey(brain().url, await login(brain().url, brain().adminPassword), `paced-${o.pacing}`);
      const c = createBrainClient({ baseUrl: brain().url, apiKey: key, fetch, pacing: o.pacing, retry: { maxAttempts: o.maxAttempts } });
      return { brain: c, call: async () => (await c.GET("/api/v1/memory/skills")).response.status };
    },
  },
];

describe.each(cases)("$name: $n requests of $op", (k) => {
  const b = budget(k.op, k.policy);
  const rate = b.limit / b.window_s;
  const expected = (k.n - b.burst) / rate;

  test(`paced: no 429, and about (n - burst) / rate seconds`, async () => {
    const { n, fetch } = counting();
    const { call } = await k.client(fetch, { pacing: "delay" });
    const r = await run(k.n, 4, call);
    console.log(`${k.name} paced: n=${k.n} burst=${b.burst} rate=${rate}/s sent=${n.sent} 429s=${n.refused} elapsed=${r.seconds.toFixed(2)}s expected=${expected.toFixed(2)}s`);
    expect(n.refused).toBe(0);
    expect(n.sent).toBe(k.n);
    expect(r.statuses.every((s) => s === 200)).toBe(true);
    expect(Math.abs(r.seconds - expected)).toBeLessThanOrEqual(0.2 * expected);
  });

  test(`unpaced: the same requests draw 429s`, async () => {
    const { n, fetch } = counting();
    const { call } = await k.client(fetch, { pacing: "off", maxAttempts: 1 });
    const r = await run(k.n, 4, call);
    const ok = r.statuses.filter((s) => s === 200).length;
    console.log(`${k.name} unpaced: n=${k.n} sent=${n.sent} 429s=${n.refused} ok=${ok} elapsed=${r.seconds.toFixed(2)}s`);
    expect(n.sent).toBe(k.n);
    expect(n.refused).toBeGreaterThan(0);
    expect(n.refused + ok).toBe(k.n);
    // The server admits the burst and what refilled meanwhile, no more.
    expect(ok).toBeLessThanOrEqual(b.burst + Math.ceil(r.seconds * rate) + 1);
  });
});
