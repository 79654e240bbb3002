// The typed client for brain's API: openapi-fetch over the types that
// openapi-typescript generates from ../../../openapi.json (make client),
// paced by the budgets the spec declares and calm about 429s (see pacer.ts
// and retry.ts).
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema";
import { Pacer, type PacingMode } from "./pacer";
import { pacedFetch, type RetryOptions } from "./retry";

export type ApiError = components["schemas"]["Error"];
export { LocalRateLimitError } from "./pacer";
export type { PacingMode } from "./pacer";
export type { RetryOptions } from "./retry";

export interface BrainClientOptions {
  /** Where the API is: "" (the page's origin) by default, else e.g. "https://brain.example.com". */
  baseUrl?: string;
  /** fetch's credentials: "same-origin" by default ("omit" with an API key); "include" sends the session cookie to another origin. */
  credentials?: RequestCredentials;
  /** An API key (brk_...), sent as X-API-Key; without one, the session cookie is the credential. */
  apiKey?: string;
  /** The fetch to send with (globalThis.fetch by default). */
  fetch?: (input: Request, init?: RequestInit) => Promise<Response>;
  /** "delay" (default): wait for the budget; "fail-fast": throw LocalRateLimitError; "off": send at once. */
  pacing?: PacingMode;
  /** Retries of 429 and 503 with Retry-After. */
  retry?: RetryOptions;
  /** The clock the pacer reads, in ms (Date.now by default). */
  now?: () => number;
}

export type BrainClient = Client<paths> & {
  /** The pacer: its buckets and the stream slots of this client. */
  readonly pacer: Pacer;
  /** Takes a stream slot and returns its release; throws LocalRateLimitError when all are held. */
  acquireStream(): () => void;
};

export function createBrainClient(o: BrainClientOptions = {}): BrainClient {
  const pacer = new Pacer({ plane: o.apiKey ? "apikey" : "session", mode: o.pacing, now: o.now });
  const base = o.fetch ?? ((input: Request, init?: RequestInit) => globalThis.fetch(input, init));
  const client = createClient<paths>({
    baseUrl: o.baseUrl ?? "",
    credentials: o.credentials ?? (o.apiKey ? "omit" : "same-origin"),
    headers: o.apiKey ? { "X-API-Key": o.apiKey } : undefined,
    fetch: pacedFetch(base, pacer, o.retry),
  });
  return Object.assign(client, { pacer, acquireStream: () => pacer.acquireStream() });
}

export function newClient(baseUrl = "") {
  return createBrainClient({ baseUrl });
}

// health is the smallest typed call: the compiler checks the path, the
// success body and the error envelope against the spec.
export async function health(client = newClient()): Promise<string> {
  const { data, error } = await client.GET("/api/v1/health");
  if (error) {
    const e: ApiError = error;
    throw new Error(`${e.code}: ${e.message}`);
  }
  return `${data.status} ${data.version}`;
}

// JobLogEvent is one message of a job's log (GET /api/v1/jobs/{id}/log):
// the spec's x-events of that stream, a union the compiler narrows on
// event.
export type JobLogEvent = components["schemas"]["FollowJobLogEvent"];

// progress says where a job is, from one event of its log.
export function progress(ev: JobLogEvent): string {
  switch (ev.event) {
    case "job.progress":
      return `${ev.data.items_done} of ${ev.data.items_total}`;
    case "job.succeeded":
      return `done: ${ev.data.items_total}`;
    case "job.failed":
      return `failed: ${ev.data.error}`;
    case "stream.closing":
      return `closed: ${ev.data.reason}`;
  }
}
