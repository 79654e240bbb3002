// The tests that run the TypeScript client against a real brain: test/, and
// a feature's src/features/*/*.server.test.ts. `npm run test:server`. The globalSetup builds ./cmd/brain once (Go needed);
// files run one after another, as each starts its own server and the timing
// assertions want the cores.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "src/features/**/*.server.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
