// The client's retries of the ingest, which the spec marks idempotent (its
// answer may say Idempotent-Replayed): a refused batch is sent again, the
// same bytes.
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { operations } from "../../api/budgets";
import { createBrainClient } from "../../api/client";

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

it("the spec marks the ingest idempotent", () => {
  expect(operations["ingest-memory"]).toMatchObject({ method: "POST", idempotent: true });
});

it("sends an ingest refused with 429 again, with the same body", async () => {
  const bodies: string[] = [];
  const replies = [
    () => new Response(JSON.stringify({ code: "rate-limited", message: "busy", details: {} }), { status: 429, headers: { "Content-Type": "application/json", "Retry-After": "2" } }),
    () => new Response(JSON.stringify({ job_id: "j" }), { status: 202, headers: { "Content-Type": "application/json" } }),
  ];
  const fetch = async (req: Request) => {
    bodies.push(await req.text());
    return replies[bodies.length - 1]!();
  };
  const c = createBrainClient({ baseUrl: "http://brain.test", fetch, pacing: "off", retry: { random: () => 0 } });
  const body = { project: "p", items: [{ text: "a note" }] };
  const p = c.POST("/api/v1/memory/ingest", { body });
  await vi.advanceTimersByTimeAsync(1999);
  expect(bodies).toHaveLength(1);
  await vi.advanceTimersByTimeAsync(1);
  expect((await p).response.status).toBe(202);
  expect(bodies).toHaveLength(2);
  expect(bodies[1]).toBe(bodies[0]);
  expect(JSON.parse(bodies[1]!)).toEqual(body);
});
