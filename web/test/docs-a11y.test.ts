// What /docs adds to Swagger UI for people who use a screen reader or need
// contrast, checked in headless Chromium: the Servers select has a name,
// a level-2 heading sits between the title and the tags, and every method
// badge, version pill and the Authorize button reach 4.5:1 (WCAG AA).
// test/lighthouse.test.ts scores the page as a whole.
import { describe, expect, it } from "vitest";
import { haveChromium, shot, useBrowser } from "./chromium";
import { useBrain } from "./use-brain";

/** contrast is the WCAG contrast ratio of two CSS rgb() colours. */
function contrast(a: string, b: string): number {
  const lum = (c: string) => {
    const [r, g, bl] = (c.match(/[\d.]+/g) ?? []).slice(0, 3).map((v) => {
      const s = Number(v) / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * bl!;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

describe.runIf(haveChromium())("/docs for assistive technology", () => {
  const brain = useBrain();
  const browser = useBrowser(() => brain().url);

  it("names the Servers select and orders its headings", async () => {
    const { page } = browser.w();
    await page.goto(brain().url + "/docs");
    await expect.poll(() => page.getByRole("combobox", { name: "Server" }).count(), { timeout: 15_000 }).toBe(1);
    const levels = await page.locator("h1, h2, h3, h4, h5, h6").evaluateAll((hs) => hs.map((h) => Number(h.tagName[1])));
    expect(levels.slice(0, 3)).toEqual([1, 2, 3]);
    levels.forEach((l, i) => expect(l - (levels[i - 1] ?? 0), `heading ${i} (h${l})`).toBeLessThanOrEqual(1));
    await shot(page, "80-docs");
  });

  it("gives each badge, pill and the Authorize button a contrast of 4.5:1 or more", async () => {
    const { page } = browser.w();
    const pairs = await page
      .locator(".opblock-summary-method, .info .title small, .btn.authorize")
      .evaluateAll((els) =>
        els.map((el) => {
          const text = el.matches("small") ? el.querySelector("pre")! : el;
          const bg = getComputedStyle(el).backgroundColor;
          return { what: el.textContent, fg: getComputedStyle(text).color, bg: bg === "rgba(0, 0, 0, 0)" ? "rgb(255, 255, 255)" : bg };
        }),
      );
    expect(pairs.length).toBeGreaterThan(5);
    for (const p of pairs) expect(contrast(p.fg, p.bg), `${p.what}: ${p.fg} on ${p.bg}`).toBeGreaterThanOrEqual(4.5);
  });
});
