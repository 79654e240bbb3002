// A paced search in headless Chromium against a real brain: past the
// session's budget the page's pacer holds the next search back, says so
// with a countdown in the caller's own words, and sends it when the budget
// allows; the server never answers 429. Screenshot 44-paced-search.
import { describe, expect, it } from "vitest";
import { haveChromium, logIn, shot, unexpected, useBrowser } from "../../../test/chromium";
import { useBrain } from "../../../test/use-brain";

const run = haveChromium();

describe.runIf(run)("a search past the session's budget", () => {
  // 20 a minute, a burst of 3: past the burst the pacer holds each request about 3 s.
  const brain = useBrain({ BRAIN_RATE_LIMIT_SESSION: "20/min,burst=3" });
  const browser = useBrowser(() => brain().url);

  it("is held with a notice and a countdown, then answered: no 429", async () => {
    const { page } = browser.w();
    await logIn(page, brain().url, brain().adminPassword);
    const seen: number[] = [];
    page.on("response", (r) => r.url().includes("/api/") && seen.push(r.status()));
    await page.getByTestId("nav-query").click();
    const banner = page.getByTestId("busy-banner");
    let shown = false;
    const appeared = banner.waitFor({ timeout: 60_000 }).then(() => (shown = true));
    const searching = page.getByText("Searching…");
    let searches = 0;
    while (!shown && searches < 8) {
      await page.getByTestId("query-input").fill(`heron ${++searches}`);
      await page.getByTestId("query-submit").click();
      await expect.poll(async () => shown || (await searching.count()) === 0, { timeout: 30_000 }).toBe(true);
    }
    await appeared;
    const text = await banner.textContent();
    expect(text).toContain("You have used your requests for now — more in ");
    expect(text).toMatch(/more in \d+ s$/);
    await shot(page, "44-paced-search");
    await banner.waitFor({ state: "detached", timeout: 30_000 });
    // Gone because the held search was sent and answered.
    await expect.poll(() => searching.count(), { timeout: 30_000 }).toBe(0);
    expect(await page.getByTestId("query-empty").count()).toBe(1);
    expect(seen).not.toContain(429);
    expect(unexpected(browser.w().errors, [401])).toEqual([]);
  });
});
