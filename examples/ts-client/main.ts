// A Node.js program using brain's TypeScript client (web/src/api, imported,
// not copied): it ingests a small batch with an API key, follows its job's
// log until it has succeeded, then queries a word of the batch and prints the top hit.
// Run from web/: BRAIN_URL=... BRAIN_API_KEY=brk_... npx tsx ../examples/ts-client/main.ts
import { createBrainClient, progress, type ApiError, type JobLogEvent } from "../../web/src/api/client";
import { openStream } from "../../web/src/api/streams";

const url = process.env.BRAIN_URL;
const apiKey = process.env.BRAIN_API_KEY;
if (!url || !apiKey) {
  console.error("set BRAIN_URL (e.g. http://127.0.0.1:8080) and BRAIN_API_KEY (brk_...)");
  process.exit(2);
}

// Paced by the spec's budgets; 429s and 503s are waited out and retried.
const brain = createBrainClient({ baseUrl: url, apiKey });

function fail(what: string, e: ApiError): never {
  throw new Error(`${what}: ${e.code}: ${e.message}`);
}

async function main() {
  const ingested = await brain.POST("/api/v1/memory/ingest", {
    body: {
      project: "ts-client-example",
      items: [
        { text: "Retry a refused request after the Retry-After the server names, with jitter.", skill: "http" },
        { text: "Pace requests from the budgets the OpenAPI spec declares.", skill: "http" },
        { text: "A job's log streams its progress until it ends.", skill: "streams" },
      ],
    },
  });
  if (ingested.error) fail("ingest", ingested.error);
  const jobId = ingested.data.job_id;
  console.log(`ingested: job ${jobId}${ingested.data.replayed ? " (a replay of the same batch)" : ""}`);

  // Follow the job's log until it has succeeded. A small batch may be done
  // before the log opens: the log then answers 204 (closed, no end seen), and
  // the job's state says how it ended.
  const end = await new Promise<JobLogEvent | undefined>((resolve, reject) => {
    let last: JobLogEvent | undefined;
    const log = openStream(brain, "/api/v1/jobs/{id}/log", {
      id: jobId,
      onEvent: (ev) => {
        if (ev.event === "job.progress") console.log(`job: ${progress(ev)}`);
        if (ev.event === "job.succeeded" || ev.event === "job.failed") last = ev;
      },
      onStatus: (s) => {
        if (s.state === "closed") resolve(last);
        if (s.state === "failed") {
          log.close();
          reject(new Error(`job log: ${s.error.code}: ${s.error.message}`));
        }
      },
    });
  });
  if (end?.event === "job.failed") throw new Error(`job ${jobId} failed: ${end.data.error}`);
  if (end?.event === "job.succeeded") {
    console.log(`job succeeded: ${end.data.items_total} items stored`);
  } else {
    const job = await brain.GET("/api/v1/jobs/{id}", { params: { path: { id: jobId } } });
    if (job.error) fail("job", job.error);
    if (job.data.status !== "succeeded") throw new Error(`job ${jobId} ${job.data.status}: ${job.data.error ?? ""}`);
    console.log(`job succeeded: ${job.data.items_done} items stored`);
  }

  const q = "budgets";
  const found = await brain.GET("/api/v1/memory/query", { params: { query: { q, project: "ts-client-example", limit: 1 } } });
  if (found.error) fail("query", found.error);
  const top = found.data.results[0];
  if (!top) throw new Error(`no hit for "${q}"`);
  console.log(`top hit for "${q}": ${top.text}`);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
