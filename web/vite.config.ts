/// <reference types="vitest/config" />
// The dashboard's build: `npm run build` writes dist/, which the Go binary
// embeds (web/site.go). `npm run dev` serves it with hot reload and sends
// the API's paths to a brain on :8080 (go run ./cmd/brain). `npm test` runs
// the unit tests, a feature's (src/features/*/) with the rest; its tests that
// need a real brain are *.server.test.ts (vitest.server.config.ts).
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

const brain = process.env.BRAIN_URL ?? "http://127.0.0.1:8080";

export default defineConfig({
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false },
  server: {
    proxy: Object.fromEntries(["/api", "/openapi.json", "/openapi.yaml", "/docs"].map((p) => [p, { target: brain, ws: false }])),
  },
  test: {
    include: ["src/**/*.test.ts", "src/**/*.test.tsx", "scripts/**/*.test.js"],
    exclude: ["src/**/*.server.test.ts", "**/node_modules/**"],
  },
});
