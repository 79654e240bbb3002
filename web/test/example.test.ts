// examples/ts-client run as its README says (tsx from web/), against a real
// brain with a fresh API key: it ingests, follows the job, queries, prints
// the top hit and exits 0; without its settings it exits 2.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { expect, test } from "vitest";
import { repoRoot } from "./brain";
import { useBrain } from "./use-brain";
import { createApiKey, login } from "./session";

const brain = useBrain();

function example(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const web = join(repoRoot, "web");
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("BRAIN_")));
  return new Promise((ok) => {
    execFile(join(web, "node_modules/.bin/tsx"), ["../examples/ts-client/main.ts"], { cwd: web, env: { ...inherited, ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
      ok({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

test("the example ingests, waits for its job and prints the top hit", async () => {
  const key = await createApiKey(brain().url, await login(brain().url, brain().adminPassword), "example");
  const r = await example({ BRAIN_URL: brain().url, BRAIN_API_KEY: key });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/^ingested: job [0-9a-f-]{36}\n/);
  expect(r.stdout).toContain("job succeeded: 3 of 3 items stored\n");
  expect(r.stdout).toMatch(/top hit for "budgets": Pace requests from the budgets the OpenAPI spec declares\.\n$/);
});

test("the example without BRAIN_URL or BRAIN_API_KEY says what to set and exits 2", async () => {
  const r = await example({ BRAIN_URL: brain().url });
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("BRAIN_API_KEY");
  expect(r.stdout).toBe("");
});
