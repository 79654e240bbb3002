// The dashboard under refusal, in headless Chromium against a real brain: a
// 429 is a calm banner with a countdown, in words for whose limit it is (the
// session's own, or one shared by everyone behind an address), and the
// request completes by itself; a request the pacer holds back is told of the
// same way, with no 429 at all; a stream refused because the session holds
// 16 already shows the same calm state, then recovers once one of them
// closes.
import { describe, expect, it } from "vitest";
import { haveChromium, logIn, shot, unexpected, useBrowser } from "./chromium";
import { useBrain } from "./use-brain";

const run = haveChromium();

describe.runIf(run)("the dashboard when brain refuses", () => {
  // A session budget of 3 at once, one more every 3 s; an ip budget (of
  // the requests without a session) of 5 at once, one more every 3 s; a
  // refused stream is told to come back after 2 s.
  const brain = useBrain({ BRAIN_RATE_LIMIT_SESSION: "20/min,burst=3", BRAIN_RATE_LIMIT_IP: "20/min,burst=5", BRAIN_STREAM_RETRY_AFTER: "2s" });
  const browser = useBrowser(() => brain().url);

  it("says the session's own budget is used, counts down, and completes the request by itself", async () => {
    const { page } = browser.w();
    await logIn(page, brain().url, brain().adminPassword);
    // The session's budget spent from Node.js, so that the page's next call
    // (its session check) meets a 429.
    const cookie = (await browser.b().context.cookies(brain().url)).map((c) => `${c.name}=${c.value}`).join("; ");
    let refused = false;
    for (let i = 0; i < 10 && !refused; i++) {
      const res = await fetch(brain().url + "/api/v1/auth/me", { headers: { Cookie: cookie } });
      await res.body?.cancel();
      refused = res.status === 429;
    }
    expect(refused).toBe(true);
    const seen: number[] = [];
    page.on("response", (r) => seen.push(r.status()));
    // Unpaced, so the page sends at once and meets the server's 429.
    // The limits page holds no stream (the next test counts them).
    await page.goto(brain().url + "/?pacing=off#/limits");
    const banner = page.getByTestId("busy-banner");
    await banner.waitFor({ timeout: 10_000 });
    const text = await banner.textContent();
    // Strings, so that a change of wording must change the test too.
    expect(text).toContain("You have used your requests for now — more in ");
    expect(text).toMatch(/more in \d+ s$/);
    await shot(page, "10-busy-banner");
    await banner.waitFor({ state: "detached", timeout: 30_000 });
    await page.getByTestId("rate-limits").waitFor({ timeout: 10_000 });
    expect(seen).toContain(429);
    expect(await page.getByRole("alert").count()).toBe(0);
  });

  it("shows a stream refused by the cap calmly, then opens it once a slot frees", async () => {
    const { page } = browser.w();
    const cookie = (await browser.b().context.cookies(brain().url)).find((c) => c.name === "brain_session");
    expect(cookie).toBeDefined();
    // Sixteen streams of the page's own session, held from Node.js.
    // Each response is kept: a body nothing refers to may be collected,
    // and its connection closed with it.
    const held: { ac: AbortController; res: Response }[] = [];
    for (let i = 0; i < 16; i++) {
      const ac = new AbortController();
      const res = await fetch(brain().url + "/api/v1/events", {
        headers: { Cookie: `brain_session=${cookie!.value}`, Accept: "text/event-stream" },
        signal: ac.signal,
      });
      expect(res.status, `stream ${i + 1}`).toBe(200);
      held.push({ ac, res });
    }
    try {
      await page.goto(brain().url + "/#/");
      const live = page.getByTestId("live-status");
      await expect.poll(() => live.getAttribute("data-state"), { timeout: 10_000 }).toBe("busy");
      expect(await live.textContent()).toMatch(/retrying in \d+ s/);
      await shot(page, "11-stream-refused");
      held.pop()!.ac.abort();
      await expect.poll(() => live.getAttribute("data-state"), { timeout: 15_000 }).toBe("open");
      await shot(page, "12-stream-recovered");
    } finally {
      for (const h of held) h.ac.abort();
    }
  });

  it("says when the pacer holds a request back for the session's own budget, and sends it then: no 429", async () => {
    const { page } = browser.w();
    // A new session, with a budget of its own; its first answers teach the
    // page's pacer the budget (20/min, burst 3).
    await browser.b().context.clearCookies();
    await logIn(page, brain().url, brain().adminPassword);
    const seen: number[] = [];
    page.on("response", (r) => seen.push(r.status()));
    await page.evaluate(() => (location.hash = "#/keys"));
    const banner = page.getByTestId("busy-banner");
    let shown = false;
    const appeared = banner.waitFor({ timeout: 60_000 }).then(() => (shown = true));
    // Keys made one after another (each a POST, then the list again): past
    // the burst the pacer holds the next request about 3 s.
    let made = 0;
    while (!shown && made < 8) {
      await page.getByTestId("key-name").fill(`paced-${++made}`);
      await page.getByTestId("key-create").click();
      await expect.poll(async () => shown || (await page.getByTestId("key-create").isEnabled()), { timeout: 30_000 }).toBe(true);
    }
    await appeared;
    const text = await banner.textContent();
    expect(text).toContain("You have used your requests for now — more in ");
    expect(text).toMatch(/more in \d+ s$/);
    await shot(page, "51-paced-notice");
    await banner.waitFor({ state: "detached", timeout: 30_000 });
    // Gone because what it held was sent: every key made is listed.
    await expect.poll(() => page.getByTestId("key-row").count(), { timeout: 30_000 }).toBe(made);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen).not.toContain(429);
  });

  it("says brain is busy when a budget shared with others is spent (ip), and completes the request by itself", async () => {
    const { page } = browser.w();
    await browser.b().context.clearCookies();
    // The ip budget spent from Node.js (the same address as the page): the
    // page's session check, sent without a session, meets a 429 of scope ip.
    let refused = false;
    for (let i = 0; i < 10 && !refused; i++) {
      const res = await fetch(brain().url + "/api/v1/auth/me");
      await res.body?.cancel();
      refused = res.status === 429;
    }
    expect(refused).toBe(true);
    // A new load (no hash: the last test left one, and a new hash alone
    // would keep the page).
    await page.goto(brain().url + "/");
    const banner = page.getByTestId("busy-banner");
    await banner.waitFor({ timeout: 10_000 });
    const text = await banner.textContent();
    expect(text).toContain("brain is busy — retrying in "); // a string, so that a rename renames it
    expect(text).toMatch(/retrying in \d+ s$/);
    await shot(page, "52-busy-shared");
    await banner.waitFor({ state: "detached", timeout: 30_000 });
    await page.getByTestId("login-username").waitFor({ timeout: 10_000 });
  });

  it("logged no error but the refusals it provoked", () => {
    expect(browser.w().offOrigin).toEqual([]);
    expect(unexpected(browser.w().errors, [401, 429])).toEqual([]);
  });
});
