// The paced client against a brain configured with another session budget
// than the spec's (240/min burst 5, where budgets.ts says 120/min burst 60):
// from its first answer on, the client takes the rate from RateLimit-Policy
// and the burst from what RateLimit reports left, so N requests past the
// burst draw no 429 and take about (N - burst) / rate seconds, while the same
// N unpaced draw 429s.
import { expect, test } from "vitest";
import { createBrainClient } from "../src/api/client";
import { useBrain } from "./use-brain";
import { login, withCookie } from "./session";
import { counting, run } from "./load";

const brain = useBrain({ BRAIN_RATE_LIMIT_SESSION: "240/min,burst=5" });
const rate = 4; // per second
const burst = 5;

async function session(pacing: "delay" | "off") {
  const cookie = await login(brain().url, brain().adminPassword);
  const { n, fetch } = counting();
  const c = createBrainClient({ baseUrl: brain().url, fetch: withCookie(cookie, fetch), pacing, retry: { maxAttempts: 1 } });
  return { n, call: async () => (await c.GET("/api/v1/auth/me")).response.status };
}

test("paced: the server's budget, learnt from its answers, draws no 429", async () => {
  const { n, call } = await session("delay");
  const total = 25;
  // One request first: before an answer the client knows only the spec.
  const seconds = (await run(1, 1, call)).seconds + (await run(total - 1, 4, call)).seconds;
  const expected = (total - burst) / rate;
  console.log(`configured paced: n=${total} 429s=${n.refused} elapsed=${seconds.toFixed(2)}s expected=${expected.toFixed(2)}s`);
  expect(n.refused).toBe(0);
  expect(n.sent).toBe(total);
  expect(Math.abs(seconds - expected)).toBeLessThanOrEqual(0.2 * expected);
});

test("unpaced: the same requests draw 429s", async () => {
  const { n, call } = await session("off");
  await run(25, 4, call);
  console.log(`configured unpaced: n=25 429s=${n.refused}`);
  expect(n.refused).toBeGreaterThan(0);
});
