// The paced client against a real brain (paced.ts) on both planes a client
// paces: a session and an API key, each GET /auth/me (the session budget
// and the apikey one, each 120/min burst 60). The server runs its defaults,
// which are the spec's, which budgets.ts was generated from (checked first).
import { createBrainClient } from "../src/api/client";
import { useBrain } from "./use-brain";
import { createApiKey, login, withCookie } from "./session";
import { describePaced, testServedBudgets } from "./paced";

const brain = useBrain();

testServedBudgets(brain, ["get-me"]);

describePaced([
  {
    name: "session",
    op: "get-me",
    policy: "session",
    n: 70,
    async client(fetch, o) {
      // Each login is a new session with a full budget of its own.
      const cookie = await login(brain().url, brain().adminPassword);
      const c = createBrainClient({ baseUrl: brain().url, fetch: withCookie(cookie, fetch), pacing: o.pacing, retry: { maxAttempts: o.maxAttempts } });
      return { brain: c, call: async () => (await c.GET("/api/v1/auth/me")).response.status };
    },
  },
  {
    name: "api key",
    op: "get-me",
    policy: "apikey",
    n: 70,
    async client(fetch, o) {
      // Each key is new, with a full budget of its own.
      const key = await createApiKey(brain().url, await login(brain().url, brain().adminPassword), `paced-${o.pacing}`);
      const c = createBrainClient({ baseUrl: brain().url, apiKey: key, fetch, pacing: o.pacing, retry: { maxAttempts: o.maxAttempts } });
      return { brain: c, call: async () => (await c.GET("/api/v1/auth/me")).response.status };
    },
  },
]);
