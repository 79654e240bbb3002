// The dashboard and /docs in headless Chromium against a real brain: a new
// user's whole path (log in, ingest, watch the job succeed live, find the
// notes, make and delete an API key, read the limits, try GET /auth/me in
// /docs), at a desktop's width and at 360 px, with no console error and no
// request leaving the origin. Screenshots go to web/test-results/.
import { describe, expect, it } from "vitest";
import { haveChromium, logIn, shot, unexpected, useBrowser } from "./chromium";
import { useBrain } from "./use-brain";

const run = haveChromium();

describe.runIf(run)("the dashboard, as a new user", () => {
  const brain = useBrain();
  const browser = useBrowser(() => brain().url);

  it("logs in and shows the live chart of /system/live", async () => {
    const { page } = browser.w();
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

  it("ingests notes and follows the job to succeeded, live", async () => {
    const { page } = browser.w();
    await page.getByTestId("nav-ingest").click();
    await page.getByTestId("ingest-project").fill("e2e");
    await page.getByTestId("ingest-notes").fill("Pelicans skim the harbour at dawn.\nHerons wait in the reeds.");
    await page.getByTestId("ingest-submit").click();
    try {
      await expect.poll(() => page.getByTestId("job-status").getAttribute("data-status"), { timeout: 20_000 }).toBe("succeeded");
    } catch (e) {
      await shot(page, "03-ingest-failed");
      const said = await page.getByTestId("job-progress").textContent();
      throw new Error(`the job's progress says ${JSON.stringify(said)}`, { cause: e });
    }
    await shot(page, "03-ingest");
  });

  it("finds the notes by query, and lists the job", async () => {
    const { page } = browser.w();
    await page.getByTestId("nav-query").click();
    await page.getByTestId("query-input").fill("pelicans");
    await page.getByTestId("query-submit").click();
    await expect.poll(() => page.getByTestId("query-result").first().textContent(), { timeout: 10_000 }).toMatch(/Pelicans/);
    await shot(page, "04-query");
    await page.getByTestId("nav-jobs").click();
    await expect.poll(() => page.getByTestId("job-row").count(), { timeout: 10_000 }).toBeGreaterThan(0);
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
    for (const nav of ["nav-overview", "nav-ingest", "nav-keys", "nav-limits"]) {
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
