// The dashboard's own pages read by keyboard, in headless Chromium against a
// real brain: paging keeps the list, the scroll and the focus; deleting a key
// asks first with the safe choice focused; the limits page lists apart the
// budgets a session never draws from, with no word broken across lines.
import { describe, expect, it, onTestFinished } from "vitest";
import { haveChromium, logIn, shot, unexpected, useBrowser } from "./chromium";
import { createApiKey } from "./session";
import { useBrain } from "./use-brain";

const run = haveChromium();

describe.runIf(run)("the dashboard's pages, by keyboard", () => {
  const brain = useBrain();
  const browser = useBrowser(() => brain().url);
  const deletes: string[] = [];

  it("keeps the page, the scroll and the focus while the next page loads", async () => {
    const { page } = browser.w();
    await logIn(page, brain().url, brain().adminPassword);
    page.on("request", (r) => r.method() === "DELETE" && deletes.push(r.url()));
    const cookie = (await browser.b().context.cookies(brain().url)).map((c) => `${c.name}=${c.value}`).join("; ");
    // The keys page shows 20 keys a page: 21 make two pages.
    for (let i = 0; i < 21; i++) await createApiKey(brain().url, cookie, `key-${String(i).padStart(2, "0")}`);
    await page.getByTestId("nav-keys").click();
    const rows = page.getByTestId("key-row");
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(20);

    // The fewest rows the list ever had, from here on.
    await page.evaluate(() => {
      const w = window as unknown as { fewest: number };
      const count = () => document.querySelectorAll('[data-testid="key-row"]').length;
      w.fewest = count();
      new MutationObserver(() => (w.fewest = Math.min(w.fewest, count()))).observe(document.body, { childList: true, subtree: true });
    });
    // The second page's answer is held until the test has looked.
    let release!: () => void;
    const held = new Promise<void>((ok) => (release = ok));
    let asked!: () => void;
    const requested = new Promise<void>((ok) => (asked = ok));
    await page.route(
      (u) => u.pathname === "/api/v1/apikeys" && u.searchParams.has("cursor"),
      async (route) => {
        asked();
        await held;
        await route.continue();
      },
    );
    // Whatever the outcome, the next tests see the second page unheld.
    onTestFinished(async () => {
      release();
      await page.unroute(() => true);
    });

    const pager = page.getByRole("navigation", { name: "Key pages" });
    await pager.getByRole("button", { name: "Next" }).focus();
    const scrolled = await page.evaluate(() => window.scrollY);
    expect(scrolled, "the pager is below the fold").toBeGreaterThan(0);
    const focused = () => page.evaluate(() => document.activeElement?.textContent?.trim());
    await page.keyboard.press("Enter");
    await requested;
    // Meanwhile the first page stays, marked busy, where the reader left it;
    // Next pressed again is not a third page.
    await page.keyboard.press("Enter");
    expect(await rows.count()).toBe(20);
    expect(await page.getByTestId("keys-list").getAttribute("aria-busy")).toBe("true");
    expect(await page.evaluate(() => window.scrollY)).toBe(scrolled);
    expect(await focused()).toBe("Next");

    release();
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(1);
    expect(await pager.textContent()).toContain("Page 2");
    expect(await page.evaluate(() => (window as unknown as { fewest: number }).fewest), "the list never vanished").toBeGreaterThan(0);
    // The last page: Next is disabled, so focus moved to Previous.
    await expect.poll(focused).toBe("Previous");
    await shot(page, "60-keys-page-2");
  });

  it("asks before deleting a key, with keeping it focused", async () => {
    const { page } = browser.w();
    const row = page.getByTestId("key-row").first();
    const id = await row.getAttribute("data-key-id");
    const focused = () => page.evaluate(() => document.activeElement?.getAttribute("data-testid"));
    await row.getByTestId("key-delete").click();
    expect(await focused()).toBe("key-delete-cancel");
    await page.keyboard.press("Enter"); // keeps it, and focus is back on Delete
    expect(await focused()).toBe("key-delete");
    await page.keyboard.press("Enter"); // asks again
    expect(await focused()).toBe("key-delete-cancel");
    expect(deletes).toEqual([]);
    expect(await page.locator(`[data-key-id="${id}"]`).count()).toBe(1);
  });

  it("lists apart the budgets for API keys, and breaks no word at 1280 px", async () => {
    const { page } = browser.w();
    await page.getByTestId("nav-limits").click();
    const own = page.getByRole("table", { name: "Budgets this browser draws from" });
    const others = page.getByRole("table", { name: "Other budgets: for API keys" });
    await own.waitFor();
    await expect.poll(() => page.getByTestId("limit-session-remaining").textContent(), { timeout: 10_000 }).toMatch(/\d/);
    for (const p of ["session", "stream-opens-per-user", "streams", "ip", "login"]) expect(await own.getByTestId(`limit-${p}`).count(), p).toBe(1);
    expect(await own.getByTestId("limit-apikey").count()).toBe(0);
    expect(await others.getByTestId("limit-apikey").count()).toBe(1);
    expect(await others.getByTestId("limit-session").count()).toBe(0);

    // Every word of every cell on one line: a word whose text spans two
    // lines was broken inside (at a hyphen, or anywhere).
    const broken = await page.evaluate(() => {
      const out: string[] = [];
      for (const cell of document.querySelectorAll(".limits th, .limits td")) {
        const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let n = walk.nextNode(); n; n = walk.nextNode()) {
          for (const m of (n.textContent ?? "").matchAll(/\S+/g)) {
            const r = document.createRange();
            r.setStart(n, m.index);
            r.setEnd(n, m.index + m[0].length);
            const lines = new Set([...r.getClientRects()].map((x) => Math.round(x.top)));
            if (lines.size > 1) out.push(m[0]);
          }
        }
        if (cell.scrollWidth > cell.clientWidth) out.push(`${cell.textContent} (overflows)`);
      }
      return out;
    });
    expect(broken).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
    await shot(page, "61-limits");
  });

  it("logged no error", () => {
    expect(browser.w().offOrigin).toEqual([]);
    expect(unexpected(browser.w().errors, [401])).toEqual([]);
  });
});
