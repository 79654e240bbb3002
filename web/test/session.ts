// Credentials for tests in Node, where fetch keeps no cookies: login returns
// the session cookie to send, withCookie adds it to every request of a
// client, createApiKey makes a key with a session.
import { createBrainClient } from "../src/api/client";

type Fetch = (input: Request, init?: RequestInit) => Promise<Response>;

const plain: Fetch = (input, init) => globalThis.fetch(input, init);

/** withCookie sends cookie ("brain_session=...") with every request through next. */
export function withCookie(cookie: string, next: Fetch = plain): Fetch {
  return (input, init) => {
    input.headers.set("Cookie", cookie);
    return next(input, init);
  };
}

/** login logs in and returns the session cookie as a Cookie header's value. */
export async function login(baseUrl: string, password: string, username = "admin"): Promise<string> {
  const { data, error, response } = await createBrainClient({ baseUrl }).POST("/api/v1/auth/login", {
    body: { username, password },
  });
  if (error || !data) throw new Error(`login: ${response.status} ${JSON.stringify(error)}`);
  const set = response.headers.getSetCookie().find((c) => c.startsWith("brain_session="));
  if (!set) throw new Error("login: no brain_session cookie");
  return set.split(";")[0]!;
}

/** createApiKey creates an API key (brk_...) for the session's user. */
export async function createApiKey(baseUrl: string, cookie: string, name = "test"): Promise<string> {
  const brain = createBrainClient({ baseUrl, fetch: withCookie(cookie) });
  const { data, error, response } = await brain.POST("/api/v1/apikeys", { body: { name } });
  if (error || !data) throw new Error(`create api key: ${response.status} ${JSON.stringify(error)}`);
  return data.key;
}
