// Lighthouse 12 (the desktop preset, in headless Chromium: chromium.ts) on the two
// pages a visitor opens first: / — what anyone sees before logging in, the
// dashboard's login page — and /docs. Accessibility and best practices must
// score 95 or more on both. Performance is printed, and asserted (90 or more
// on /) only when LIGHTHOUSE_PERF=1 says the machine is quiet: on busy cores
// it measures the machine. `make lighthouse` runs this file alone.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "./brain";
import { chromiumPath, haveChromium } from "./chromium";
import { useBrain } from "./use-brain";

interface Report {
  categories: Record<string, { score: number | null; auditRefs: { id: string; weight: number }[] }>;
  audits: Record<string, { score: number | null; title: string }>;
}

/** audit runs the Lighthouse CLI on url and returns its report. */
function audit(url: string): Promise<Report> {
  const bin = join(repoRoot, "web/node_modules/.bin/lighthouse");
  const args = [url, "--chrome-flags=--headless --no-sandbox", "--preset=desktop", "--output=json", "--output-path=stdout", "--quiet"];
  return new Promise((ok, fail) =>
    execFile(bin, args, { env: { ...process.env, CHROME_PATH: chromiumPath }, maxBuffer: 64 << 20 }, (err, out, stderr) =>
      err ? fail(new Error(`lighthouse ${url}: ${err.message}\n${stderr}`)) : ok(JSON.parse(out)),
    ),
  );
}

/** scores prints a report's four scores and the audits that cost points; returns the scores out of 100. */
function scores(page: string, r: Report): Record<string, number> {
  const s = Object.fromEntries(Object.entries(r.categories).map(([id, c]) => [id, Math.round((c.score ?? 0) * 100)]));
  const lost = Object.values(r.categories).flatMap((c) =>
    c.auditRefs.filter((a) => a.weight > 0 && (r.audits[a.id]?.score ?? 1) < 1).map((a) => a.id),
  );
  console.log(`lighthouse ${page}: ${Object.entries(s).map(([id, n]) => `${id} ${n}`).join(", ")}` +
    (lost.length ? `; points lost on ${lost.join(", ")}` : ""));
  return s;
}

const perf = process.env.LIGHTHOUSE_PERF === "1";

describe.runIf(haveChromium())("Lighthouse", () => {
  const brain = useBrain();

  it.each([
    ["/", perf ? 90 : 0],
    ["/docs", 0],
  ])("scores %s at 95 or more for accessibility and best practices", async (page, performance) => {
    const s = scores(page, await audit(brain().url + page));
    expect(s.accessibility, "accessibility").toBeGreaterThanOrEqual(95);
    expect(s["best-practices"], "best practices").toBeGreaterThanOrEqual(95);
    expect(s.performance, "performance").toBeGreaterThanOrEqual(performance);
  }, 240_000);
});
