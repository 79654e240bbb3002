// A Node.js program using brain's TypeScript client (web/src/api, imported,
// not copied): it reads the server's health, logs in, creates an API key
// while following its own events (the key's apikey.created arrives on
// them), lists its keys, uses the new key to read one snapshot of the
// server's load, then deletes the key and logs out. Every call is paced by
// the budgets the spec declares, and a 429 or 503 is waited out by the
// client itself: there is no rate-limit code here.
// Run from web/: BRAIN_URL=... BRAIN_PASSWORD=... npx tsx ../examples/ts-client/main.ts
import { createBrainClient, health, type ApiError, type BrainClient } from "../../web/src/api/client";
import { openStream, type StreamEvent, type StreamPath } from "../../web/src/api/streams";

const url = process.env.BRAIN_URL;
const username = process.env.BRAIN_USERNAME ?? "admin";
const password = process.env.BRAIN_PASSWORD ?? "";
if (!url || password === "") {
  console.error("set BRAIN_URL (e.g. http://127.0.0.1:8080) and BRAIN_PASSWORD (and BRAIN_USERNAME, admin by default)");
  process.exit(2);
}

// Node.js's fetch keeps no cookies: this client keeps the session's, which
// login sets (and logout clears).
let cookie = "";
const brain = createBrainClient({
  baseUrl: url,
  fetch: async (req, init) => {
    if (cookie) req.headers.set("Cookie", cookie);
    const res = await fetch(req, init);
    const set = res.headers.getSetCookie();
    if (set.length > 0) cookie = set.map((c) => c.split(";")[0]).join("; ");
    return res;
  },
});

function fail(what: string, e: ApiError): never {
  throw new Error(`${what}: ${e.code}: ${e.message}`);
}

/**
 * next follows a stream until an event named name arrives, and resolves
 * with it; onOpen is called once the stream is open (whatever is published
 * after it reaches the stream).
 */
function next<P extends StreamPath, N extends StreamEvent<P>["event"]>(client: BrainClient, path: P, name: N, onOpen?: () => void) {
  return new Promise<Extract<StreamEvent<P>, { event: N }>>((resolve, reject) => {
    const stream = openStream(client, path, {
      onEvent: (ev) => {
        if (ev.event !== name) return;
        stream.close();
        resolve(ev as Extract<StreamEvent<P>, { event: N }>);
      },
      onStatus: (s) => {
        if (s.state === "open") onOpen?.();
        if (s.state === "failed") reject(new Error(`${path}: ${s.error.code}: ${s.error.message}`));
      },
    });
  });
}

async function main() {
  console.log(`health: ${await health(brain)}`);

  const login = await brain.POST("/api/v1/auth/login", { body: { username, password } });
  if (login.error) fail("login", login.error);
  console.log(`logged in as ${login.data.user.username}`);

  // Create a key once the caller's events are followed: its apikey.created comes on them.
  let opened!: () => void;
  const open = new Promise<void>((resolve) => (opened = resolve));
  const created = next(brain, "/api/v1/events", "apikey.created", opened);
  await open;
  const made = await brain.POST("/api/v1/apikeys", { body: { name: "ts-client-example" } });
  if (made.error) fail("create key", made.error);
  const ev = await created;
  console.log(`event: ${ev.event} ${ev.data.name} (${ev.data.prefix}…)`);

  const keys = await brain.GET("/api/v1/apikeys", { params: { query: { limit: 100 } } });
  if (keys.error) fail("list keys", keys.error);
  console.log(`keys: ${keys.data.keys.map((k) => k.name).join(", ")}`);

  // The key is a credential of its own: a client with it draws from the apikey plane.
  const withKey = createBrainClient({ baseUrl: url, apiKey: made.data.key });
  const me = await withKey.GET("/api/v1/auth/me");
  if (me.error) fail("me", me.error);
  console.log(`the key acts for ${me.data.user.username}`);
  const live = await next(withKey, "/api/v1/system/live", "system.live");
  console.log(`live: ${live.data.open_streams} open streams, ${live.data.requests_per_s.toFixed(1)} requests/s`);

  const deleted = await brain.DELETE("/api/v1/apikeys/{id}", { params: { path: { id: made.data.id } } });
  if (deleted.error) fail("delete key", deleted.error);
  const out = await brain.POST("/api/v1/auth/logout");
  if (out.error) fail("logout", out.error);
  console.log("deleted the key and logged out");
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
