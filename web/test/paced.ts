// The paced client against a real brain, for any operation: N requests well
// past a budget's burst, through createBrainClient with pacing "delay",
// draw no 429 and take about the time the budget allows; the same N
// unpaced draw 429s. test/paced.test.ts runs it on the platform's planes; a
// feature runs it on budgets of its own (src/features/*/*.server.test.ts).
import { describe, expect, test } from "vitest";
import type { BrainClient } from "../src/api/client";
import { operations, type Budget, type OperationId, type RateBudget } from "../src/api/budgets";
import type { Brain } from "./brain";
import { counting, run } from "./load";

type Fetch = (input: Request, init?: RequestInit) => Promise<Response>;

export interface PacedCase {
  name: string;
  op: OperationId;
  policy: string;
  /** Requests sent: well past the burst, so the pacer has to wait for (n - burst) / rate seconds. */
  n: number;
  /** A client with fetch as its fetch, and a call that returns its status. */
  client(fetch: Fetch, o: { pacing: "delay" | "off"; maxAttempts?: number }): Promise<{ brain: BrainClient; call: () => Promise<number> }>;
}

/** budget is op's rate budget named policy, as budgets.ts (the spec) declares it. */
export function budget(op: OperationId, policy: string): RateBudget {
  const b = (operations[op].budgets as readonly Budget[]).find((b) => b.policy === policy);
  if (!b || !("limit" in b)) throw new Error(`${op} has no rate budget ${policy}`);
  return b;
}

/** testServedBudgets checks that the server runs the budgets of ids that the client was generated from. */
export function testServedBudgets(brain: () => Brain, ids: readonly OperationId[]): void {
  test("the server runs the budgets the client was generated from", async () => {
    const res = await fetch(`${brain().url}/openapi.json`);
    const spec = (await res.json()) as { paths: Record<string, Record<string, { operationId?: string; "x-rate-limit"?: unknown }>> };
    for (const id of ids) {
      const op = spec.paths[operations[id].path]?.[operations[id].method.toLowerCase()];
      expect(op?.operationId).toBe(id);
      expect(op?.["x-rate-limit"]).toEqual(operations[id].budgets);
    }
  });
}

/** describePaced runs each case paced (no 429, in about the time the budget allows) and unpaced (429s). */
export function describePaced(cases: PacedCase[]): void {
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
}
