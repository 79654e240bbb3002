// vitest globalSetup of the server tests: builds the dashboard (npm run
// build, so the binary embeds it for the browser tests) and then brain, once
// per run, unless $BRAIN_BIN names a binary; provides its path to every test
// file.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { execFileSync } from "node:child_process";
import { buildBrain, repoRoot } from "./brain";

declare module "vitest" {
  export interface ProvidedContext {
    brainBin: string;
  }
}

export default async function setup(project: TestProject) {
  if (process.env.BRAIN_BIN) {
    project.provide("brainBin", process.env.BRAIN_BIN);
    return;
  }
  // NODE_ENV is vitest's "test" here: the build must be the one users get.
  execFileSync("npm", ["run", "--silent", "build"], {
    cwd: join(repoRoot, "web"),
    env: { ...process.env, NODE_ENV: "production" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const dir = await mkdtemp(join(tmpdir(), "brain-bin-"));
  project.provide("brainBin", await buildBrain(dir));
  return () => rm(dir, { recursive: true, force: true });
}
