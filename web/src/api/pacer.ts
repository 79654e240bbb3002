// The client's pacer: a local token bucket per budget the spec declares,
// seeded from budgets.ts (generated from openapi.json's x-rate-limit) and
// corrected by each response's RateLimit header, so a request that the server
// would refuse waits here instead. The stream plane is a count of open
// streams, not a bucket.
import type { components } from "./schema";
import { operations, type Budget, type Operation, type OperationId, type Plane, type RateBudget } from "./budgets";

export type ApiError = components["schemas"]["Error"];

/** The plane a client's requests draw from: a session cookie or an API key. */
export type CallerPlane = "session" | "apikey";

/** What the pacer does with a request the budgets would refuse. */
export type PacingMode = "delay" | "fail-fast" | "off";

/**
 * LocalRateLimitError is thrown instead of sending a request when pacing is
 * "fail-fast" (or a stream slot is refused): envelope is the rate-limited
 * envelope the server would have answered with.
 */
export class LocalRateLimitError extends Error {
  readonly envelope: ApiError;
  /** details are the refused budget's, as the server's 429 would give them. */
  constructor(details: ApiError["details"]) {
    const envelope: ApiError = { code: "rate-limited", message: "brain is busy — please retry in a moment.", details };
    super(envelope.message);
    this.name = "LocalRateLimitError";
    this.envelope = envelope;
  }
}

function isRate(b: Budget): b is RateBudget {
  return "limit" in b;
}

/**
 * budgetsFor lists the rate budgets a caller on plane draws from for op:
 * those of its own plane, the ip plane's unconditional ones (login's) and
 * the stream plane's open budgets (a stream's connects and reconnects). An
 * entry with applies_to ("unauthenticated", "forbidden") describes another
 * caller and is left out.
 */
export function budgetsFor(op: Operation, plane: CallerPlane): RateBudget[] {
  return op.budgets.filter(isRate).filter((b) => b.applies_to === undefined && (b.plane === plane || b.plane === "ip" || b.plane === "stream"));
}

/** streamCap is the fewest streams one caller may hold open, from the spec. */
export function streamCap(): number {
  let cap = Infinity;
  for (const op of Object.values(operations) as Operation[]) {
    for (const b of op.budgets) if ("concurrent" in b && b.applies_to === undefined) cap = Math.min(cap, b.concurrent);
  }
  return cap;
}

interface Bucket {
  readonly spec: RateBudget; // as budgets.ts declares it
  budget: RateBudget; // as the server's last response stated it (see adopt)
  tokens: number;
  at: number; // ms: when tokens was last brought up to date
  inflight: number; // requests sent from this bucket and not answered yet
  seen: number; // the most the server has said was left, plus one
  low: number; // the fewest left any answer reported since none was in flight
}

/** A parsed item of a RateLimit header: `"session";r=57;t=12`. */
export interface RateLimitItem {
  policy: string;
  r: number;
  t?: number;
}

/** parseRateLimit reads a RateLimit header; items it cannot read are skipped. */
export function parseRateLimit(header: string | null): RateLimitItem[] {
  const out: RateLimitItem[] = [];
  for (const { policy, params } of parseItems(header)) {
    const r = params.get("r");
    const t = params.get("t");
    if (r !== undefined) out.push(t === undefined ? { policy, r } : { policy, r, t });
  }
  return out;
}

/** What the server last said of one budget, from RateLimit and RateLimit-Policy. */
export interface RateLimitReport {
  policy: string;
  /** From RateLimit-Policy: q, requests per window (open streams for a cap). */
  limit?: number;
  /** From RateLimit-Policy: w, the window in seconds. */
  window_s?: number;
  /** From RateLimit: r, what is left now. */
  remaining: number;
  /** From RateLimit: t, seconds until the bucket is full again. */
  reset_s?: number;
  /** When it was reported, in ms. */
  at: number;
}

/** parseRateLimitPolicy reads a RateLimit-Policy header: policy → {q, w}. */
export function parseRateLimitPolicy(header: string | null): Map<string, { q?: number; w?: number }> {
  const out = new Map<string, { q?: number; w?: number }>();
  for (const it of parseItems(header)) out.set(it.policy, { q: it.params.get("q"), w: it.params.get("w") });
  return out;
}

// parseItems reads a structured-field list of `"name";k=n;k=n` items, the
// shape of both headers; parameters that are not numbers are skipped.
function parseItems(header: string | null): { policy: string; params: Map<string, number> }[] {
  if (!header) return [];
  const out: { policy: string; params: Map<string, number> }[] = [];
  for (const raw of header.split(",")) {
    const [name, ...params] = raw.trim().split(";");
    const policy = name?.trim().replace(/^"(.*)"$/, "$1");
    if (!policy) continue;
    const m = new Map<string, number>();
    for (const p of params) {
      const [k, v] = p.trim().split("=");
      const n = Number(v);
      if (k && Number.isFinite(n) && n >= 0) m.set(k.trim(), n);
    }
    out.push({ policy, params: m });
  }
  return out;
}

export interface PacerOptions {
  plane: CallerPlane;
  mode?: PacingMode;
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The most streams this client holds open at once; the spec's cap when larger or unset. */
  maxStreams?: number;
  /**
   * onHold is told of each hold (mode "delay") before it starts, and calls
   * the function it returns once the hold is over (or cut short).
   */
  onHold?: (h: Hold) => (() => void) | void;
}

/**
 * A hold: the pacer keeps a request back until `until` (ms since the
 * epoch), nothing sent, because the caller's own budget `policy` (of plane
 * `scope`) is spent as this client counts it.
 */
export interface Hold {
  until: number;
  /** When the request began waiting: a request queued behind others is held again and again. */
  since: number;
  scope: Plane;
  policy: string;
  operation: OperationId;
}

/** sleep waits ms, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A Ticket is what acquire took; hand it to settle with the response. */
export interface Ticket {
  readonly buckets: readonly Bucket[];
}

export class Pacer {
  readonly plane: CallerPlane;
  readonly mode: PacingMode;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly onHold: PacerOptions["onHold"];
  private readonly buckets = new Map<string, Bucket>();
  private readonly cap: number;
  private open = 0;

  constructor(o: PacerOptions) {
    this.plane = o.plane;
    this.mode = o.mode ?? "delay";
    this.now = o.now ?? Date.now;
    this.sleep = o.sleep ?? sleep;
    this.onHold = o.onHold;
    this.cap = Math.min(streamCap(), o.maxStreams ?? Infinity);
  }

  private bucket(b: RateBudget): Bucket {
    let k = this.buckets.get(b.policy);
    if (!k) {
      k = { spec: b, budget: b, tokens: b.burst, at: this.now(), inflight: 0, seen: 0, low: Infinity };
      this.buckets.set(b.policy, k);
    }
    return k;
  }

  // refill brings a bucket's tokens up to now: limit per window_s, at most burst.
  private refill(k: Bucket, now: number): void {
    const rate = k.budget.limit / (k.budget.window_s * 1000);
    k.tokens = Math.min(k.budget.burst, k.tokens + (now - k.at) * rate);
    k.at = now;
  }

  /** tokens says how many requests the named budget admits now, as this client sees it. */
  tokens(policy: string): number | undefined {
    const k = this.buckets.get(policy);
    if (!k) return undefined;
    this.refill(k, this.now());
    return k.tokens;
  }

  /**
   * acquire takes a token from each budget op draws from, waiting until all
   * have one (mode "delay") or throwing LocalRateLimitError (mode
   * "fail-fast").
   */
  async acquire(id: OperationId | undefined, signal?: AbortSignal): Promise<Ticket> {
    if (this.mode === "off" || id === undefined) return { buckets: [] };
    const ks = budgetsFor(operations[id], this.plane).map((b) => this.bucket(b));
    const since = Date.now();
    for (;;) {
      const now = this.now();
      let wait = 0;
      let short: Bucket | undefined;
      for (const k of ks) {
        this.refill(k, now);
        if (k.tokens >= 1) continue;
        const ms = Math.ceil(((1 - k.tokens) * k.budget.window_s * 1000) / k.budget.limit);
        if (ms > wait) {
          wait = ms;
          short = k;
        }
      }
      if (!short) {
        for (const k of ks) {
          k.tokens -= 1;
          k.inflight++;
        }
        return { buckets: ks };
      }
      if (this.mode === "fail-fast") {
        const b = short.budget;
        throw new LocalRateLimitError({
          scope: b.plane,
          policy: b.policy,
          limit: b.limit,
          window_s: b.window_s,
          retry_after_s: Math.max(1, Math.ceil(wait / 1000)),
        });
      }
      const done = this.onHold?.({ until: Date.now() + wait, since, scope: short.budget.plane, policy: short.budget.policy, operation: id });
      try {
        await this.sleep(wait, signal);
      } finally {
        done?.();
      }
    }
  }

  /**
   * settle ends a request: its buckets take the remaining quota the
   * response's RateLimit header reports (less what is still in flight), so
   * the local view follows the server's. Pass no response when the request
   * failed without one.
   */
  settle(t: Ticket, res?: Response): void {
    for (const k of t.buckets) k.inflight--;
    if (!res) return;
    const now = this.now();
    const items = parseRateLimit(res.headers.get("RateLimit"));
    const policies = parseRateLimitPolicy(res.headers.get("RateLimit-Policy"));
    this.report(items, policies, now);
    if (this.mode === "off") return;
    for (const it of items) {
      const k = this.buckets.get(it.policy);
      if (!k) continue;
      k.seen = Math.max(k.seen, it.r + 1);
      adopt(k, policies.get(it.policy));
      this.refill(k, now);
      // The server decides concurrent requests in an order of its own,
      // not the order they were sent or answered in: while others are in
      // flight, an answer's count may be older than another's, so it may
      // only lower the estimate. Once none is, every request sent has been
      // decided, and the fewest left any of them reported is at most what
      // the server has now: the estimate takes it, up or down.
      k.low = Math.min(k.low, it.r);
      if (k.inflight > 0) {
        k.tokens = Math.min(k.tokens, Math.max(0, it.r - k.inflight));
      } else {
        k.tokens = Math.min(k.budget.burst, k.low);
        k.low = Infinity;
      }
    }
  }

  private readonly reported = new Map<string, RateLimitReport>();
  private readonly listeners = new Set<(r: RateLimitReport[]) => void>();

  private report(items: RateLimitItem[], policies: Map<string, { q?: number; w?: number }>, now: number): void {
    if (items.length === 0) return;
    for (const it of items) {
      const p = policies.get(it.policy);
      const r: RateLimitReport = { policy: it.policy, remaining: it.r, at: now };
      if (it.t !== undefined) r.reset_s = it.t;
      if (p?.q !== undefined) r.limit = p.q;
      if (p?.w !== undefined) r.window_s = p.w;
      this.reported.set(it.policy, r);
    }
    const all = this.reports();
    for (const l of this.listeners) l(all);
  }

  /** reports lists what the server last said of each budget, by policy name. */
  reports(): RateLimitReport[] {
    return [...this.reported.values()].sort((a, b) => a.policy.localeCompare(b.policy));
  }

  /** onReports calls listener with every report after each response that carries RateLimit; it returns the unsubscribe. */
  onReports(listener: (r: RateLimitReport[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * acquireStream takes one of the caller's stream slots (the spec's cap, 16
   * by default) and returns its release; with every slot held it throws
   * LocalRateLimitError, the refusal the server would send.
   */
  acquireStream(): () => void {
    if (this.open >= this.cap) {
      throw new LocalRateLimitError({ scope: "stream", policy: "streams", limit: this.cap });
    }
    this.open++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.open--;
    };
  }

  /** openStreams says how many stream slots are held. */
  openStreams(): number {
    return this.open;
  }
}

/**
 * adopt sets a bucket to what the server states: the rate of its
 * RateLimit-Policy (a server may be configured with other budgets than the
 * spec's) and, since no header states a burst, at most the most it has said
 * was left plus one, so that a client back from idle does not send a burst
 * the server would refuse. Until a response says otherwise, the spec's
 * budget stands.
 */
function adopt(k: Bucket, p: { q?: number; w?: number } | undefined): void {
  const limit = p?.q !== undefined && p.q >= 1 ? p.q : k.spec.limit;
  const window_s = p?.w !== undefined && p.w >= 1 ? p.w : k.spec.window_s;
  const cap = limit === k.spec.limit && window_s === k.spec.window_s ? k.spec.burst : limit;
  k.budget = { ...k.spec, limit, window_s, burst: Math.max(1, Math.min(cap, k.seen)) };
}

const matchers = (Object.entries(operations) as [OperationId, Operation][]).map(([id, op]) => ({
  id,
  method: op.method,
  re: new RegExp(`${op.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`),
}));

/** operationOf names the spec's operation a request calls, if any. */
export function operationOf(method: string, url: string): OperationId | undefined {
  const path = new URL(url, "http://localhost").pathname;
  return matchers.find((m) => m.method === method.toUpperCase() && m.re.test(path))?.id;
}
