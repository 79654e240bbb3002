// The dashboard and /docs in headless Chromium against a real brain: a new
// user's whole path through the dashboard's own pages (log in, watch the
// live view, make and delete an API key, read the limits, try GET /auth/me
// in /docs), at a desktop's width and at 360 px, with no console error and
// no request leaving the origin. A feature's pages have tests of their own
// (src/features/*/*.server.test.ts). Screenshots go to web/test-results/.
import { describe, expect, it } from "vitest";
import { createBrainClient } from "../src/api/client";
import { openStream } from "../src/api/streams";
import { haveChromium, logIn, shot, unexpected, useBrowser } from "./chromium";
import { useBrain } from "./use-brain";
import { withCookie } from "./session";

/** liveGauges reads the names of the gauges of one /system/live snapshot. */
function liveGauges(url: string, cookie: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const s = openStream(createBrainClient({ baseUrl: url, fetch: withCookie(cookie) }), "/api/v1/system/live", {
      onEvent: (ev) => {
        if (ev.event !== "system.live") return;
        s.close();
        resolve(Object.keys(ev.data.gauges));
      },
      onStatus: (st) => st.state === "failed" && reject(new Error(st.error.message)),
    });
  });
}

/** liveKept counts the snapshots a new /system/live stream gets first: those taken before it opened. */
function liveKept(url: string, cookie: string): Promise<number> {
  const opened = Date.now();
  let kept = 0;
  return new Promise((resolve, reject) => {
    const s = openStream(createBrainClient({ baseUrl: url, fetch: withCookie(cookie) }), "/api/v1/system/live", {
      onEvent: (ev) => {
        if (ev.event !== "system.live") return;
        if (Date.parse(ev.data.at) < opened) return void kept++;
        s.close();
        resolve(kept);
      },
      onStatus: (st) => st.state === "failed" && reject(new Error(st.error.message)),
    });
  });
}

/** recordCanvasText keeps in window.drawn each text a canvas draws: the chart's tick labels. */
function recordCanvasText() {
  const drawn: string[] = ((window as unknown as { drawn: string[] }).drawn = []);
  const fillText = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
    drawn.push(String(text));
    return fillText.call(this, text, ...rest);
  };
}

const run = haveChromium();

describe.runIf(run)("the dashboard, as a new user", () => {
  const brain = useBrain();
  const browser = useBrowser(() => brain().url);

  it("logs in and shows the live chart of /system/live", async () => {
    const { page } = browser.w();
    await page.addInitScript(recordCanvasText); // the chart's first seconds, for the tick labels checked below
    await page.goto(brain().url + "/");
    await page.getByTestId("login-username").waitFor();
    await shot(page, "01-login");
    await logIn(page, brain().url, brain().adminPassword);
    await expect.poll(() => page.getByTestId("live-status").getAttribute("data-state"), { timeout: 10_000 }).toBe("open");
    await page.locator('[data-testid="live-chart"] canvas').first().waitFor({ timeout: 10_000 });
    await page.getByTestId("live-requests").waitFor({ timeout: 10_000 });
    await page.waitForTimeout(3000); // a few snapshots (one a second) for the picture
    await shot(page, "02-overview");
  });

  it("shows a number for each gauge the snapshot carries, whatever the features wired in", async () => {
    const { page } = browser.w();
    const cookie = (await browser.b().context.cookies(brain().url)).map((c) => `${c.name}=${c.value}`).join("; ");
    const gauges = await liveGauges(brain().url, cookie);
    await expect.poll(() => page.locator('[data-testid^="live-gauge-"]').count(), { timeout: 10_000 }).toBe(gauges.length);
    for (const g of gauges) expect(await page.getByTestId(`live-gauge-${g}`).textContent()).toMatch(/^\d/);
  });

  it("fills the chart at once with the snapshots the server kept, ticks on whole seconds, the latest values in its legend", async () => {
    const { page } = browser.w();
    await page.getByTestId("nav-keys").click(); // the overview's stream closes
    const cookie = (await browser.b().context.cookies(brain().url)).map((c) => `${c.name}=${c.value}`).join("; ");
    let kept = 0;
    await expect.poll(async () => (kept = await liveKept(brain().url, cookie)), { timeout: 20_000 }).toBeGreaterThanOrEqual(5);
    await page.getByTestId("nav-overview").click();
    const first = await page.waitForFunction(() => Number(document.querySelector<HTMLElement>('[data-testid="live-chart"]')?.dataset.points) || 0);
    expect(await first.jsonValue(), "points at the chart's first paint").toBeGreaterThanOrEqual(kept);
    const values = page.locator('[data-testid="live-chart"] .u-legend .u-series:not(:first-child) .u-value');
    await expect.poll(() => values.allTextContents()).toEqual(expect.arrayContaining([expect.stringMatching(/^\d/)]));
    for (const v of await values.allTextContents()) expect(v, "a legend value").toMatch(/^-?\d/);
    // The legend follows the latest snapshot as new ones arrive (one a second).
    const legendTime = page.locator('[data-testid="live-chart"] .u-legend .u-series:first-child .u-value');
    const shown = await legendTime.textContent();
    await expect.poll(() => legendTime.textContent(), { timeout: 10_000 }).not.toBe(shown);
    // Since the first test: the chart's first seconds too, a span of a few seconds where uPlot would tick at half-seconds.
    const ticks = (await page.evaluate(() => (window as unknown as { drawn: string[] }).drawn)).filter((t) => /:\d\d/.test(t));
    expect(ticks.length, "time ticks drawn").toBeGreaterThan(0);
    for (const t of ticks) expect(t, "a time tick").not.toMatch(/:\d\d[.,]\d/);
    await shot(page, "91-chart-history");
  });

  it("creates an API key, shows it once, and deletes it", async () => {
    const { page } = browser.w();
    await page.getByTestId("nav-keys").click();
    await page.getByTestId("key-name").fill("e2e-key");
    await page.getByTestId("key-create").click();
    await expect.poll(() => page.getByTestId("new-key").textContent(), { timeout: 10_000 }).toMatch(/^brk_/);
    await shot(page, "05-key-created");
    await page.getByTestId("key-done").click();
    await expect(await page.getByTestId("new-key").count()).toBe(0);
    await expect.poll(() => page.getByTestId("key-row").count(), { timeout: 10_000 }).toBe(1);
    await page.getByTestId("key-delete").click();
    await page.getByTestId("key-delete-confirm").click();
    await expect.poll(() => page.getByTestId("key-row").count(), { timeout: 10_000 }).toBe(0);
  });

  it("shows each budget the responses reported beside what the spec declares", async () => {
    const { page } = browser.w();
    await page.getByTestId("nav-limits").click();
    await page.getByTestId("rate-limits").waitFor();
    await expect.poll(() => page.getByTestId("limit-session-remaining").textContent(), { timeout: 10_000 }).toMatch(/\d/);
    await shot(page, "06-limits");
  });

  it("fits 360 px without scrolling sideways", async () => {
    const { page } = browser.w();
    await page.setViewportSize({ width: 360, height: 740 });
    for (const nav of ["nav-overview", "nav-keys", "nav-limits"]) {
      await page.getByTestId(nav).click();
      await page.waitForTimeout(200); // a frame or two to lay out
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, `${nav} at 360 px`).toBeLessThanOrEqual(360);
    }
    await shot(page, "07-limits-360px");
    await page.getByTestId("nav-overview").click();
    await shot(page, "08-overview-360px");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it("runs try-it on GET /api/v1/auth/me in /docs with the session, and shows its limits in words", async () => {
    const { page } = browser.w();
    await page.goto(brain().url + "/docs");
    const op = page.locator("#operations-Auth-get-me");
    await op.waitFor({ timeout: 15_000 });
    await op.locator(".opblock-summary").first().click();
    await expect.poll(() => op.textContent()).toMatch(/120 per minute, burst 60, per session/);
    await op.getByRole("button", { name: "Try it out" }).click();
    await op.getByRole("button", { name: "Execute" }).click();
    const status = op.locator(".live-responses-table tr.response .response-col_status").first();
    await expect.poll(() => status.textContent(), { timeout: 10_000 }).toMatch(/200/);
    await expect.poll(() => op.locator(".live-responses-table .microlight").first().textContent()).toMatch(/"session"/);
    await shot(page, "09-docs-try-it");
  });

  it("sent nothing to another origin and logged no error", () => {
    expect(browser.w().offOrigin).toEqual([]);
    // The session check before logging in answers 401.
    expect(unexpected(browser.w().errors, [401])).toEqual([]);
  });
});
