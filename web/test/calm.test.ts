// The dashboard under refusal, in headless Chromium against a real brain: a
// 429 is a calm "busy — retrying in N s" banner and the request completes by
// itself; a stream refused because the session holds 16 already shows the
// same calm state, then recovers once one of them closes.
import { describe, expect, it } from "vitest";
import { haveChromium, logIn, shot, unexpected, useBrowser } from "./chromium";
import { useBrain } from "./use-brain";

const run = haveChromium();

describe.runIf(run)("the dashboard when brain refuses", () => {
  // A session budget of 3 at once, one more every 3 s; a refused stream is
  // told to come back after 2 s.
  const brain = useBrain({ BRAIN_RATE_LIMIT_SESSION: "20/min,burst=3", BRAIN_STREAM_RETRY_AFTER: "2s" });
  const browser = useBrowser(() => brain().url);

  it("says brain is busy, counts down, and completes the request by itself", async () => {
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
    expect(text).toContain("brain is busy — retrying in "); // a string, so that a rename renames it
    expect(text).toMatch(/retrying in \d+ s/);
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

  it("logged no error but the refusals it provoked", () => {
    expect(browser.w().offOrigin).toEqual([]);
    expect(unexpected(browser.w().errors, [401, 429])).toEqual([]);
  });
});
