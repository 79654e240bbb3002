// The example's ingest in /docs, in headless Chromium against a real brain:
// Try it out prefills the body from the spec's example (real words, not
// strings made up from the schema's patterns), Execute stores it, and the
// API reads back the project and note it names. Screenshots go to
// web/test-results/.
import { describe, expect, it } from "vitest";
import { createBrainClient } from "../../api/client";
import { haveChromium, logIn, shot, unexpected, useBrowser } from "../../../test/chromium";
import { useBrain } from "../../../test/use-brain";
import { login, withCookie } from "../../../test/session";

const run = haveChromium();

type Batch = { project: string; items: { text: string; tags?: string[] }[] };

/** strings lists every string in v, however deep. */
function strings(v: unknown): string[] {
  if (typeof v === "string") return [v];
  if (v && typeof v === "object") return Object.values(v).flatMap(strings);
  return [];
}

describe.runIf(run)("the ingest operation in /docs", () => {
  const brain = useBrain();
  const browser = useBrowser(() => brain().url);

  it("prefills a realistic batch, stores it, and the API reads it back", async () => {
    const { page } = browser.w();
    await logIn(page, brain().url, brain().adminPassword);
    const spec = await (await fetch(brain().url + "/openapi.json")).json();
    const example: Batch | undefined = spec.components.schemas.IngestRequest.examples?.[0];

    await page.goto(brain().url + "/docs");
    const op = page.locator("#operations-Memory-ingest-memory");
    await op.waitFor({ timeout: 15_000 });
    await op.locator(".opblock-summary").first().click();
    await op.getByRole("button", { name: "Try it out" }).click();
    const body = op.locator("textarea.body-param__text");
    await body.waitFor();
    const prefilled: Batch = JSON.parse(await body.inputValue());
    // Words a person would write: a body made up from the patterns has
    // strings such as "|z~zzyy~~}z".
    for (const s of strings(prefilled)) expect(s).toMatch(/^[\p{L}\p{N}][\p{L}\p{N} ,.'-]*$/u);
    expect(prefilled).toEqual(example);

    await op.getByRole("button", { name: "Execute" }).click();
    const status = op.locator(".live-responses-table tr.response .response-col_status").first();
    await expect.poll(() => status.textContent(), { timeout: 10_000 }).toMatch(/^\s*202/);
    await shot(page, "71-docs-ingest-example");

    const api = createBrainClient({ baseUrl: brain().url, fetch: withCookie(await login(brain().url, brain().adminPassword)) });
    const projects = async () => (await api.GET("/api/v1/memory/projects")).data?.projects.map((p) => [p.name, p.items]);
    await expect.poll(projects, { timeout: 20_000 }).toEqual([[prefilled.project, prefilled.items.length]]);
    const { data } = await api.GET("/api/v1/memory/query", { params: { query: { q: prefilled.items[0]!.text, project: prefilled.project } } });
    expect(data?.results.map((r) => [r.project, r.text, r.tags])).toEqual(prefilled.items.map((i) => [prefilled.project, i.text, i.tags ?? []]));
  });

  it("sent nothing to another origin and logged no error", () => {
    expect(browser.w().offOrigin).toEqual([]);
    // The session check before logging in answers 401.
    expect(unexpected(browser.w().errors, [401])).toEqual([]);
  });
});
