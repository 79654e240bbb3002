// The typed client for brain's API: openapi-fetch over the types that
// openapi-typescript generates from ../../../openapi.json (make client),
// paced by the budgets the spec declares and calm about 429s (see pacer.ts
// and retry.ts).
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema";
import type { OperationId } from "./budgets";
import { Pacer, type Hold, type PacingMode, type RateLimitReport } from "./pacer";
import { pacedFetch, type RetryOptions, type Wait } from "./retry";

export type ApiError = components["schemas"]["Error"];
export { LocalRateLimitError } from "./pacer";
export type { Hold, PacingMode, RateLimitReport } from "./pacer";
export type { RetryOptions, Wait } from "./retry";

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
  /**
   * The most streams this client opens at once: 2 in a browser by default
   * (a browser has 6 HTTP/1.1 connections per origin for all its tabs),
   * else the spec's cap (16). A stream past it waits for a slot.
   */
  maxStreams?: number;
  /** The clock the pacer reads, in ms (Date.now by default). */
  now?: () => number;
}

/**
 * What the client is waiting out until `until` (ms since the epoch): a 429
 * or 503 it will retry by itself, or a hold of its pacer (`held`: nothing
 * was sent, the caller's own budget is spent; status is then 429, the
 * refusal the server would have sent).
 */
export interface Busy {
  until: number;
  status: number;
  scope?: string;
  policy?: string;
  operation?: OperationId;
  held?: boolean;
}

/**
 * holdNoticeMs is the shortest wait onBusy tells of: a hold that, with the
 * holds of the same request before it (one queued behind others is held
 * again and again), keeps it back this long. Past a budget's burst most
 * single holds are a fraction of a second (120/min refills one every 0.5 s):
 * told of, they would flash a notice gone before it can be read, for a
 * request that merely seems a little slow.
 */
export const holdNoticeMs = 1000;

export type BrainClient = Client<paths> & {
  /** The pacer: its buckets and the stream slots of this client. */
  readonly pacer: Pacer;
  /** Takes a stream slot and returns its release; throws LocalRateLimitError when all are held. */
  acquireStream(): () => void;
  /**
   * onBusy calls listener with the latest wait while any request of this
   * client waits out a refusal or a hold of holdNoticeMs or more, and with
   * null once none does; it returns the unsubscribe. A stream's refusals
   * are reported by the stream itself.
   */
  onBusy(listener: (busy: Busy | null) => void): () => void;
  /** Where the API is, as given ("" for the page's origin). */
  readonly baseUrl: string;
  /**
   * stream sends a stream's GET, paced like every call but never retried:
   * openStream waits out refusals itself. Use openStream (streams.ts).
   */
  stream(path: string, init: { headers: Record<string, string>; signal: AbortSignal }): Promise<Response>;
  /** rateLimits lists what the server last reported of each budget (RateLimit, RateLimit-Policy). */
  rateLimits(): RateLimitReport[];
  /** onRateLimits calls listener with rateLimits() after each response that reports them. */
  onRateLimits(listener: (r: RateLimitReport[]) => void): () => void;
};

// busyState keeps the waits in progress and tells listeners the latest.
function busyState() {
  const waits = new Set<Busy>();
  const listeners = new Set<(b: Busy | null) => void>();
  const tell = () => {
    let latest: Busy | null = null;
    for (const w of waits) if (!latest || w.until > latest.until) latest = w;
    for (const l of listeners) l(latest);
  };
  return {
    add(b: Busy): () => void {
      waits.add(b);
      tell();
      return () => {
        waits.delete(b);
        tell();
      };
    },
    subscribe(l: (b: Busy | null) => void): () => void {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  };
}

export function createBrainClient(o: BrainClientOptions = {}): BrainClient {
  const inBrowser = typeof document !== "undefined";
  const busy = busyState();
  const onHold = (h: Hold) => (h.until - h.since >= holdNoticeMs ? busy.add({ ...h, status: 429, held: true }) : undefined);
  const pacer = new Pacer({ plane: o.apiKey ? "apikey" : "session", mode: o.pacing, now: o.now, maxStreams: o.maxStreams ?? (inBrowser ? 2 : undefined), onHold });
  const baseUrl = o.baseUrl ?? "";
  const credentials = o.credentials ?? (o.apiKey ? "omit" : "same-origin");
  const base = o.fetch ?? ((input: Request, init?: RequestInit) => globalThis.fetch(input, init));
  const onWait = (w: Wait) => {
    const done = busy.add({ until: w.until, status: w.status, scope: w.error?.details?.scope, policy: w.error?.details?.policy, operation: w.operation });
    const theirs = o.retry?.onWait?.(w);
    return () => {
      done();
      theirs?.();
    };
  };
  const client = createClient<paths>({
    baseUrl,
    credentials,
    headers: o.apiKey ? { "X-API-Key": o.apiKey } : undefined,
    fetch: pacedFetch(base, pacer, { ...o.retry, onWait }),
  });
  const streamFetch = pacedFetch(base, pacer, { maxAttempts: 1 });
  return Object.assign(client, {
    pacer,
    baseUrl,
    acquireStream: () => pacer.acquireStream(),
    stream: (path: string, init: { headers: Record<string, string>; signal: AbortSignal }) => {
      const headers = new Headers(init.headers);
      if (o.apiKey) headers.set("X-API-Key", o.apiKey);
      // The signal goes in init too: fetch then follows it directly, where a
      // Request's signal follows it through the Request, which may be
      // collected once sent (so a close would not reach the connection).
      return streamFetch(new Request(baseUrl + path, { headers, credentials, signal: init.signal }), { signal: init.signal });
    },
    onBusy: busy.subscribe,
    rateLimits: () => pacer.reports(),
    onRateLimits: (l: (r: RateLimitReport[]) => void) => pacer.onReports(l),
  });
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
