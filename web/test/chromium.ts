// Headless Chromium for the browser tests: Debian's /usr/bin/chromium, or the
// browser CHROMIUM names (Google Chrome on GitHub's runner: .ci/run picks it),
// driven by playwright-core (which never downloads a browser). Each page records
// its console errors and every request that leaves the server's origin, and
// screenshots go to web/test-results/, the tests' artefacts.
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, expect } from "vitest";
import { repoRoot } from "./brain";

/** Where Chromium is: $CHROMIUM (Chromium or Google Chrome), else Debian's package's path. */
export const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";

/**
 * haveChromium says whether the browser tests can run. Under CI=true a
 * missing Chromium is a failure, never a skip: it throws.
 */
export function haveChromium(): boolean {
  if (existsSync(chromiumPath)) return true;
  if (process.env.CI === "true") {
    throw new Error(`no Chromium at ${chromiumPath}: apt-get install chromium, or set CHROMIUM to a Chromium or Google Chrome (CI=true never skips the browser tests)`);
  }
  console.warn(`browser tests skipped: no Chromium at ${chromiumPath} (apt-get install chromium, or set CHROMIUM)`);
  return false;
}

/** Where screenshots go. */
export const artefacts = resolve(repoRoot, "web/test-results");

// As root in a container Chromium needs --no-sandbox; it also spares Google
// Chrome, run as a user, its sandbox's user namespaces, which Ubuntu 24.04's
// AppArmor may deny. The background networking flags stop either browser
// calling Google's hosts, which a closed network refuses. Chromium and Google
// Chrome take the same flags.
const flags = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface Browsing {
  context: BrowserContext;
  close(): Promise<void>;
}

/** launch starts Chromium with a fresh profile of its own, and returns its one context. */
export async function launch(viewport = { width: 1280, height: 800 }): Promise<Browsing> {
  const profile = await mkdtemp(join(tmpdir(), "brain-chromium-"));
  const context = await chromium.launchPersistentContext(profile, { executablePath: chromiumPath, args: flags, viewport, headless: true });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

export interface Watched {
  page: Page;
  /** console errors and page errors, in order. */
  errors: string[];
  /** requests to any other origin than the server's. */
  offOrigin: string[];
}

/** watch opens a page that records console errors and requests that leave origin. */
export async function watch(context: BrowserContext, origin: string): Promise<Watched> {
  const page = await context.newPage();
  const w: Watched = { page, errors: [], offOrigin: [] };
  page.on("console", (m) => {
    if (m.type() === "error") w.errors.push(m.text());
  });
  page.on("pageerror", (e) => w.errors.push(e.message));
  page.on("request", (r) => {
    const u = r.url();
    if (u.startsWith("data:") || u.startsWith("blob:")) return;
    if (new URL(u).origin !== origin) w.offOrigin.push(u);
  });
  return w;
}

/** shot saves a screenshot of page as web/test-results/<name>.png and returns its path. */
export async function shot(page: Page, name: string): Promise<string> {
  await mkdir(artefacts, { recursive: true });
  const path = join(artefacts, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

// A response the test provokes or expects (the session check before login)
// is logged by Chromium as a failed resource: those are not the page's errors.
export function unexpected(errors: string[], statuses: number[] = []): string[] {
  return errors.filter((e) => !statuses.some((s) => e.includes(`the server responded with a status of ${s}`)));
}

/** logIn logs in as admin through the login page. */
export async function logIn(page: Page, url: string, password: string): Promise<void> {
  await page.goto(url + "/");
  await page.getByTestId("login-username").fill("admin");
  await page.getByTestId("login-password").fill(password);
  await page.getByTestId("login-submit").click();
  await expect.poll(() => page.getByTestId("whoami").textContent(), { timeout: 10_000 }).toBe("admin");
}

/**
 * useBrowser launches Chromium before a file's tests and closes it after;
 * the page it returns watches origin's requests and console (see watch).
 */
export function useBrowser(origin: () => string): { b: () => Browsing; w: () => Watched } {
  let b: Browsing | undefined;
  let w: Watched | undefined;
  beforeAll(async () => {
    b = await launch();
    w = await watch(b.context, origin());
  });
  afterAll(async () => {
    await b?.close();
  });
  return {
    b: () => b ?? fail("the browser has not started"),
    w: () => w ?? fail("the browser has not started"),
  };
}

function fail(msg: string): never {
  throw new Error(msg);
}
