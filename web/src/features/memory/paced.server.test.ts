// The paced client against a real brain (test/paced.ts) on a budget of the
// example's own: an API key's GET /memory/skills, the "skills" budget, 10/s
// burst 10.
import { createBrainClient } from "../../api/client";
import { useBrain } from "../../../test/use-brain";
import { createApiKey, login } from "../../../test/session";
import { describePaced, testServedBudgets } from "../../../test/paced";

const brain = useBrain();

testServedBudgets(brain, ["list-skills"]);

describePaced([
  {
    name: "api key",
    op: "list-skills",
    policy: "skills",
    n: 50,
    async client(fetch, o) {
      // Each key is new, with a full budget of its own.
      const key = await createApiKey(brain().url, await login(brain().url, brain().adminPassword), `paced-${o.pacing}`);
      const c = createBrainClient({ baseUrl: brain().url, apiKey: key, fetch, pacing: o.pacing, retry: { maxAttempts: o.maxAttempts } });
      return { brain: c, call: async () => (await c.GET("/api/v1/memory/skills")).response.status };
    },
  },
]);
