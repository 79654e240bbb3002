// useBrain: one brain for a test file's tests (started before them, stopped
// after, and expected to exit 0), whose log is printed when one of them fails.
import { afterAll, beforeAll, beforeEach, expect, onTestFailed } from "vitest";
import { startBrain, type Brain, type StartOptions } from "./brain";

export function useBrain(env: Record<string, string> = {}, o: StartOptions = {}): () => Brain {
  let brain: Brain | undefined;
  beforeAll(async () => {
    brain = await startBrain(env, o);
  });
  afterAll(async () => {
    // SIGTERM drains and exits 0: anything else (a crash, a hang) fails the file.
    if (brain) expect(await brain.stop(), `brain's log:\n${brain.logs()}`).toBe(0);
  });
  beforeEach(() => {
    onTestFailed(() => {
      if (brain) console.error(`--- brain's log (${brain.url}) ---\n${brain.logs()}`);
    });
  });
  return () => {
    if (!brain) throw new Error("brain has not started");
    return brain;
  };
}
