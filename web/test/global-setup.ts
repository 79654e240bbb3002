// vitest globalSetup of the server tests: builds brain once per run (unless
// $BRAIN_BIN names a binary) and provides its path to every test file.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { buildBrain } from "./brain";

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
  const dir = await mkdtemp(join(tmpdir(), "brain-bin-"));
  project.provide("brainBin", await buildBrain(dir));
  return () => rm(dir, { recursive: true, force: true });
}
