// examples/ts-client run as its README says (tsx from web/), against a real
// brain: it reads the health, logs in, creates an API key and sees the key's
// event on its stream, lists the keys, follows /system/live with the key,
// then deletes the key and logs out, and exits 0; run again, it does the
// same; without its settings it exits 2.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { expect, test } from "vitest";
import { createBrainClient } from "../src/api/client";
import { repoRoot } from "./brain";
import { useBrain } from "./use-brain";
import { login, withCookie } from "./session";

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

const expected =
  /^health: ok \S+\nlogged in as admin\nevent: apikey\.created ts-client-example \(brk_[\w-]+…\)\nkeys: ts-client-example\nthe key acts for admin\nlive: \d+ open streams, \d+\.\d requests\/s\ndeleted the key and logged out\n$/;

test("the example makes a key, sees its event, follows the live view with it, and tidies up", async () => {
  for (const run of [1, 2]) {
    const start = performance.now();
    const r = await example({ BRAIN_URL: brain().url, BRAIN_PASSWORD: brain().adminPassword });
    console.log(`example, run ${run}: ${((performance.now() - start) / 1000).toFixed(2)} s\n${r.stdout}`);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(expected);
  }
  // It left no key behind, and paced itself: no request of its was refused.
  const keys = await createBrainClient({ baseUrl: brain().url, fetch: withCookie(await login(brain().url, brain().adminPassword)) }).GET("/api/v1/apikeys");
  expect(keys.data?.keys).toEqual([]);
  expect(brain().logs()).toMatch(/route=\/api\/v1\/system\/live status=200/);
  expect(brain().logs()).not.toMatch(/status=429/);
});

test("the example without BRAIN_URL or BRAIN_PASSWORD says what to set and exits 2", async () => {
  const r = await example({ BRAIN_URL: brain().url });
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("BRAIN_PASSWORD");
  expect(r.stdout).toBe("");
});
