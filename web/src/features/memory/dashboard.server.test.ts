// The example's pages in headless Chromium against a real brain: its entries
// in the navigation, ingest with the job followed live to succeeded, query,
// the jobs and one job's page, its gauge on the overview, a batch sent again
// (a replay), the answer brought into view, a large paste sent in batches,
// and its pages at 360 px, with no console error and no request leaving the
// origin.
// Screenshots go to web/test-results/.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { haveChromium, logIn, shot, unexpected, useBrowser } from "../../../test/chromium";
import { useBrain } from "../../../test/use-brain";

const run = haveChromium();

const lines = (n: number, what: string) => Array.from({ length: n }, (_, i) => `${what} ${i + 1}.`).join("\n");
const jobStatus = (page: Page) => page.getByTestId("job-status").getAttribute("data-status");

// paste fills the notes form and sends it, and waits for the answer.
async function paste(page: Page, project: string, text: string) {
  await page.getByTestId("ingest-project").fill(project);
  await page.getByTestId("ingest-notes").fill(text);
  await page.getByTestId("ingest-submit").click();
  await page.getByTestId("ingest-result").waitFor({ timeout: 20_000 });
}

// jobLinks are the jobs the answer names.
const jobLinks = (page: Page) => page.getByTestId("ingest-result").getByRole("link").allTextContents();

describe.runIf(run)("the example's pages", () => {
  const brain = useBrain();
  const browser = useBrowser(() => brain().url);

  it("are in the navigation, and its gauge on the overview", async () => {
    const { page } = browser.w();
    await logIn(page, brain().url, brain().adminPassword);
    const nav = await page.getByRole("navigation", { name: "Main" }).getByRole("link").allTextContents();
    expect(nav).toEqual(["Overview", "Ingest", "Query", "Jobs", "API keys", "Rate limits"]);
    // Waits for the Go side's LiveSnapshot.gauges (the example registers jobs_queued).
    await expect.poll(() => page.getByTestId("live-gauge-jobs_queued").textContent(), { timeout: 10_000 }).toMatch(/^\d+$/);
    expect(await page.locator("dt", { hasText: "Jobs queued" }).count()).toBe(1);
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

  it("finds the notes by query, lists the job and shows it", async () => {
    const { page } = browser.w();
    await page.getByTestId("nav-query").click();
    await page.getByTestId("query-input").fill("pelicans");
    await page.getByTestId("query-submit").click();
    await expect.poll(() => page.getByTestId("query-result").first().textContent(), { timeout: 10_000 }).toMatch(/Pelicans/);
    await shot(page, "04-query");
    await page.getByTestId("nav-jobs").click();
    await expect.poll(() => page.getByTestId("job-row").count(), { timeout: 10_000 }).toBeGreaterThan(0);
    await page.getByTestId("job-row").first().getByRole("link").click();
    await expect.poll(() => page.getByTestId("job-detail-status").textContent(), { timeout: 10_000 }).toBe("succeeded");
    expect(await page.getByTestId("nav-jobs").getAttribute("aria-current")).toBe("page");
  });

  it("shows a batch sent again at its job's real state, each time", async () => {
    const { page } = browser.w();
    await page.getByTestId("nav-ingest").click();
    // However often the page asks, the job's record says what it said before
    // the worker took the job: a record that lags the answers (as a cached
    // one does), while the job itself is done.
    const lagging = /\/api\/v1\/jobs\/[0-9a-f-]{36}$/; // the record, not its log
    let lagged = 0;
    await page.route(lagging, async (route) => {
      const res = await route.fetch();
      const { finished_at: _, ...job } = await res.json();
      await route.fulfill({ response: res, json: { ...job, status: "queued", items_done: 0 } });
      lagged++;
    });
    const pasted = lines(300, "Replayed note");
    await paste(page, "replay", pasted);
    const [job] = await jobLinks(page);
    // The job itself is done (asked outside the page, which the route does not touch).
    const record = async () => (await (await page.request.get(`${brain().url}/api/v1/jobs/${job}`)).json()).status;
    await expect.poll(record, { timeout: 30_000 }).toBe("succeeded");
    // The replays answer "now succeeded": the lagging record must not say otherwise.
    for (let i = 0; i < 2; i++) {
      await paste(page, "replay", pasted);
      expect(await page.getByTestId("ingest-result").getAttribute("data-replayed")).toBe("true");
      expect(await jobLinks(page)).toEqual([job]);
      await expect.poll(() => jobStatus(page), { timeout: 10_000 }).toBe("succeeded");
      expect(await page.getByTestId("job-status").textContent()).toBe("succeeded: 300 items stored");
    }
    expect(lagged).toBeGreaterThan(0);
    await page.unroute(lagging);
    await paste(page, "replay", pasted);
    await expect.poll(() => page.getByTestId("job-status").textContent(), { timeout: 10_000 }).toBe("succeeded: 300 items stored");
    await shot(page, "41-replayed-job");

    // Sent again as soon as it is accepted, while its job is queued or
    // running (which of them, or done already, is the server's timing):
    // each answer's progress reaches the end.
    const more = lines(1000, "Quickly replayed note");
    await paste(page, "replay", more);
    const [running] = await jobLinks(page);
    for (let i = 0; i < 3; i++) {
      await paste(page, "replay", more);
      expect(await jobLinks(page)).toEqual([running]);
      await expect.poll(() => page.getByTestId("job-status").textContent(), { timeout: 30_000 }).toBe("succeeded: 1,000 items stored");
    }
  });

  for (const size of [
    { width: 1280, height: 800 },
    { width: 390, height: 844 },
  ]) {
    it(`brings the answer into view and focus at ${size.width}x${size.height}`, async () => {
      const { page } = browser.w();
      await page.setViewportSize(size);
      await page.getByTestId("nav-ingest").click();
      await page.evaluate(() => window.scrollTo(0, 0));
      await paste(page, "in view", lines(3, `Seen at ${size.width}`));
      await expect.poll(() => jobStatus(page), { timeout: 20_000 }).toBe("succeeded");
      const box = await page.getByTestId("ingest-result").boundingBox();
      expect(box).not.toBeNull();
      expect(box!.y).toBeGreaterThanOrEqual(0);
      expect(box!.y + box!.height).toBeLessThanOrEqual(size.height);
      // Focus went with it, for keyboard and screen-reader users.
      expect(await page.evaluate(() => document.activeElement?.getAttribute("data-testid"))).toBe("ingest-outcome");
      await shot(page, `43-answer-in-view-${size.width}`);
      await page.setViewportSize({ width: 1280, height: 800 });
    });
  }

  it("sends a paste of 2,000 notes as two batches with one progress, and again as replays", async () => {
    const { page } = browser.w();
    await page.getByTestId("nav-ingest").click();
    let posts = 0;
    page.on("request", (r) => {
      if (r.method() === "POST" && r.url().endsWith("/api/v1/memory/ingest")) posts++;
    });
    const pasted = lines(2000, "Split note");
    await paste(page, "split", pasted);
    expect(posts).toBe(2);
    await expect.poll(() => page.getByTestId("job-status").textContent(), { timeout: 60_000 }).toBe("succeeded: 2,000 items stored");
    const jobs = await jobLinks(page);
    expect(jobs).toHaveLength(2);
    expect(new Set(jobs).size).toBe(2);
    await shot(page, "42-split-paste");

    await paste(page, "split", pasted);
    expect(posts).toBe(4);
    expect(await jobLinks(page)).toEqual(jobs);
    expect(await page.getByTestId("ingest-batch").evaluateAll((els) => els.map((e) => e.getAttribute("data-replayed")))).toEqual(["true", "true"]);
    await expect.poll(() => page.getByTestId("job-status").textContent(), { timeout: 10_000 }).toBe("succeeded: 2,000 items stored");
  });

  it("follows a paste of three batches with one stream at a time: never a paused progress view", async () => {
    const { page } = browser.w();
    // Every state the progress view's notice takes, recorded in the page.
    await page.evaluate(() => {
      const w = window as unknown as { streamStates: string[] };
      w.streamStates = [];
      new MutationObserver(() => {
        for (const el of document.querySelectorAll('[data-testid="job-stream-status"]')) w.streamStates.push(el.getAttribute("data-state") ?? "");
      }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-state"] });
    });
    await paste(page, "three", lines(2500, "Third note"));
    expect(await jobLinks(page)).toHaveLength(3);
    await expect.poll(() => page.getByTestId("job-status").textContent(), { timeout: 90_000 }).toBe("succeeded: 2,500 items stored");
    const states = await page.evaluate(() => (window as unknown as { streamStates: string[] }).streamStates);
    expect(states.filter((s) => s === "busy")).toEqual([]);
  });

  it("shows the batches accepted beside the one refused, and which notes that one held", async () => {
    const { page } = browser.w();
    // The second batch reaches the server with its 500th note's time spoilt,
    // so that the server itself refuses it (422, body.items[499].occurred_at).
    let posts = 0;
    await page.route("**/api/v1/memory/ingest", async (route) => {
      if (++posts !== 2) return route.continue();
      const body = route.request().postDataJSON() as { items: { occurred_at?: string }[] };
      body.items[499]!.occurred_at = "yesterday";
      await route.continue({ postData: JSON.stringify(body) });
    });
    try {
      await paste(page, "halfway", lines(2000, "Halfway note"));
      await page.getByTestId("ingest-errors").waitFor({ timeout: 20_000 });
    } finally {
      await page.unroute("**/api/v1/memory/ingest");
    }
    expect(posts).toBe(2);
    expect(await jobLinks(page)).toHaveLength(1);
    expect(await page.getByTestId("ingest-refused-batch").textContent()).toBe(
      "Batch 2 of 2 (notes 1,001–2,000) was not accepted; the one before it was, and is shown above:",
    );
    expect(await page.getByTestId("ingest-errors").textContent()).toContain("body.items[499].occurred_at");
    await expect.poll(() => page.getByTestId("job-status").textContent(), { timeout: 60_000 }).toBe("succeeded: 1,000 items stored");
  });

  it("says before sending that a note is too long", async () => {
    const { page } = browser.w();
    let posts = 0;
    page.on("request", (r) => {
      if (r.method() === "POST" && r.url().endsWith("/api/v1/memory/ingest")) posts++;
    });
    await page.getByTestId("ingest-project").fill("long");
    await page.getByTestId("ingest-notes").fill(`short\n${"x".repeat(65_537)}`);
    await page.getByTestId("ingest-submit").click();
    await expect.poll(() => page.getByTestId("ingest-problem").textContent()).toBe("note 2 is longer than 65,536 characters: split it in two");
    expect(posts).toBe(0);
  });

  it("fit 360 px without scrolling sideways", async () => {
    const { page } = browser.w();
    await page.setViewportSize({ width: 360, height: 740 });
    for (const nav of ["nav-ingest", "nav-query", "nav-jobs"]) {
      await page.getByTestId(nav).click();
      await page.waitForTimeout(200); // a frame or two to lay out
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, `${nav} at 360 px`).toBeLessThanOrEqual(360);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it("sent nothing to another origin and logged no error", () => {
    expect(browser.w().offOrigin).toEqual([]);
    // The session check before logging in answers 401; the batch refused on purpose, 422.
    expect(unexpected(browser.w().errors, [401, 422])).toEqual([]);
  });
});
