// examples/ts-client run as its README says (tsx from web/), against a real
// brain with a fresh API key: it ingests, follows the job's log to
// job.succeeded, queries, prints the top hit and exits 0; without its
// settings it exits 2; run again, it replays the batch. The server works one job at a time, and a backlog of
// large batches is queued first, so the example's job is still waiting when
// its log opens (a lone three-item job ends before, and its log answers 204).
// Here each batch of the backlog takes 0.2 to 0.35 s to store, and the example
// takes about 0.5 s to start: 12 leave its log about 1.5 s to open in.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { expect, test } from "vitest";
import { createBrainClient } from "../src/api/client";
import { repoRoot } from "./brain";
import { useBrain } from "./use-brain";
import { createApiKey, login, withCookie } from "./session";

const brain = useBrain({ BRAIN_JOB_WORKERS: "1" });

function example(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const web = join(repoRoot, "web");
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("BRAIN_")));
  return new Promise((ok) => {
    execFile(join(web, "node_modules/.bin/tsx"), ["../examples/ts-client/main.ts"], { cwd: web, env: { ...inherited, ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
      ok({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

/** backlog queues batches of 1000 items of 2 KiB for the session's user, to keep the one worker busy. */
async function backlog(cookie: string, batches: number) {
  const c = createBrainClient({ baseUrl: brain().url, fetch: withCookie(cookie) });
  for (let b = 0; b < batches; b++) {
    const items = Array.from({ length: 1000 }, (_, i) => ({ text: `backlog ${b} ${i} ${"filler ".repeat(290)}` }));
    const { error } = await c.POST("/api/v1/memory/ingest", { body: { project: "backlog", items } });
    expect(error).toBeUndefined();
  }
}

test("the example ingests, follows its job's log to job.succeeded and prints the top hit", async () => {
  const cookie = await login(brain().url, brain().adminPassword);
  const key = await createApiKey(brain().url, cookie, "example");
  await backlog(cookie, 12);
  const start = performance.now();
  const r = await example({ BRAIN_URL: brain().url, BRAIN_API_KEY: key });
  console.log(`example: ${((performance.now() - start) / 1000).toFixed(2)} s\n${r.stdout}`);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(
    /^ingested: job [0-9a-f-]{36}\n(job: \d of 3\n)*job succeeded: 3 items stored\ntop hit for "budgets": Pace requests from the budgets the OpenAPI spec declares\.\n$/,
  );
  // It read the end from the log (200), not from the job's state after a 204.
  expect(brain().logs()).toMatch(/route=\/api\/v1\/jobs\/\{id\}\/log status=200/);
  expect(brain().logs()).not.toMatch(/route=\/api\/v1\/jobs\/\{id\}\/log status=204/);
  // Again: the same batch is a replay of the ended job, whose log answers
  // 204; the example reads how it ended from the job's state.
  const again = await example({ BRAIN_URL: brain().url, BRAIN_API_KEY: key });
  expect(again.stderr).toBe("");
  expect(again.code).toBe(0);
  expect(again.stdout).toMatch(/^ingested: job [0-9a-f-]{36} \(a replay of the same batch\)\njob succeeded: 3 items stored\ntop hit for "budgets": /);
  expect(again.stdout.split("\n")[0]).toBe(`${r.stdout.split("\n")[0]} (a replay of the same batch)`);
  expect(brain().logs()).toMatch(/route=\/api\/v1\/jobs\/\{id\}\/log status=204/);
});

test("the example without BRAIN_URL or BRAIN_API_KEY says what to set and exits 2", async () => {
  const r = await example({ BRAIN_URL: brain().url });
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("BRAIN_API_KEY");
  expect(r.stdout).toBe("");
});
