// The fetch beneath every call of the client: it paces each request through
// the Pacer, then retries a 429 (or a 503 with Retry-After) after the time
// the server names, with bounded jitter and caps on attempts and total wait.
// Only GET, HEAD and a POST the server deduplicates (the spec says so: see
// Operation.idempotent in budgets.ts) are retried; when it gives up, the last response (the rate-limited envelope) goes back
// to openapi-fetch, which hands it to the caller as a typed error.
import { operationOf, parseRateLimit, sleep as defaultSleep, type ApiError, type Pacer } from "./pacer";
import { operations, type Operation, type OperationId } from "./budgets";

export interface RetryOptions {
  /** Sends in all, the first included (default 4); 1 turns retries off. */
  maxAttempts?: number;
  /** The most time spent waiting between attempts, in ms (default 60 000). */
  maxWaitMs?: number;
  /** Jitter added to each wait: up to this fraction of it (default 0.2), at most 5 s. */
  jitter?: number;
  /**
   * onWait is told of each wait for a refused request before it starts, and
   * calls the function it returns once the wait is over (or cut short).
   */
  onWait?: (w: Wait) => (() => void) | void;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** A wait for a refused request: the 429 or 503 and when it will be sent again. */
export interface Wait {
  /** When the request goes again, in ms since the epoch. */
  until: number;
  status: number;
  operation?: OperationId;
  /** The refusal's envelope, when its body was one. */
  error?: ApiError;
}

/**
 * retryable says whether a request may be sent again: a GET or HEAD, or a
 * POST to an operation the server deduplicates (op.idempotent). Never
 * another POST, a PUT, a PATCH or a DELETE.
 */
export function retryable(method: string, op: Operation | undefined): boolean {
  const m = method.toUpperCase();
  return m === "GET" || m === "HEAD" || (m === "POST" && op?.idempotent === true);
}

/**
 * retryAfterMs reads Retry-After (seconds or an HTTP date) in ms; for a 429
 * without it, the `t` of a RateLimit item with nothing left. undefined: not
 * a response to wait out.
 */
export function retryAfterMs(res: Response, now: number): number | undefined {
  const ra = res.headers.get("Retry-After");
  if (ra !== null && ra.trim() !== "") {
    const s = Number(ra);
    if (Number.isFinite(s) && s >= 0) return s * 1000;
    const d = Date.parse(ra);
    if (!Number.isNaN(d)) return Math.max(0, d - now);
  }
  if (res.status !== 429) return undefined;
  let t: number | undefined;
  for (const it of parseRateLimit(res.headers.get("RateLimit"))) {
    if (it.r === 0 && it.t !== undefined) t = Math.max(t ?? 0, it.t);
  }
  return (t ?? 1) * 1000;
}

type Fetch = (input: Request, init?: RequestInit) => Promise<Response>;

/** pacedFetch wraps fetch with the pacer and the retry rules above. */
export function pacedFetch(base: (input: Request, init?: RequestInit) => Promise<Response>, pacer: Pacer, o: RetryOptions = {}): Fetch {
  const maxAttempts = Math.max(1, o.maxAttempts ?? 4);
  const maxWaitMs = o.maxWaitMs ?? 60_000;
  const jitter = Math.max(0, o.jitter ?? 0.2);
  const random = o.random ?? Math.random;
  const wait = o.sleep ?? defaultSleep;
  return async (input, init) => {
    // The body can be read once: keep the original and send clones.
    const req = input;
    const id = operationOf(req.method, req.url);
    const again = retryable(req.method, id === undefined ? undefined : operations[id]);
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      const ticket = await pacer.acquire(id, req.signal);
      let res: Response;
      try {
        res = await base(req.clone(), init);
      } catch (e) {
        pacer.settle(ticket);
        throw e;
      }
      pacer.settle(ticket, res);
      if (!again || attempt >= maxAttempts) return res;
      if (res.status !== 429 && res.status !== 503) return res;
      const after = retryAfterMs(res, Date.now());
      if (after === undefined) return res;
      const delay = after + Math.min(5000, after * jitter) * random();
      if (waited + delay > maxWaitMs) return res;
      waited += delay;
      const error = o.onWait ? await envelopeOf(res) : undefined;
      await res.body?.cancel();
      const done = o.onWait?.({ until: Date.now() + delay, status: res.status, operation: id, error });
      try {
        await wait(delay, req.signal);
      } finally {
        done?.();
      }
    }
  };
}

// envelopeOf reads a refusal's error envelope from a copy of its body, if it is one.
async function envelopeOf(res: Response): Promise<ApiError | undefined> {
  try {
    const v: unknown = await res.clone().json();
    if (v && typeof v === "object" && "code" in v && "message" in v) return v as ApiError;
  } catch {
    // not JSON: the wait is told without it
  }
  return undefined;
}
