// The client's streams: Server-Sent Events read over fetch, so a refusal's
// status and Retry-After are seen (a native EventSource sees neither), typed
// by the spec's x-events. A stream takes one of the client's stream slots
// while it is open, waits out a 429 or 503 as long as the server says, and
// reconnects after a drop with Last-Event-ID, so nothing is missed.
//
// The SSE text is parsed by @microsoft/fetch-event-source's parser; its
// fetchEventSource wrapper is not used because it reaches for window and
// document (so it cannot run in Node.js) and cannot hold a stream slot.
import { getBytes, getLines, getMessages, type EventSourceMessage } from "@microsoft/fetch-event-source/lib/esm/parse.js";
import type { BrainClient } from "./client";
import { LocalRateLimitError, sleep, type ApiError } from "./pacer";
import { retryAfterMs } from "./retry";
import type { StreamEvents } from "./budgets";
import type { paths } from "./schema";

export type { StreamEvents };
export type StreamPath = keyof StreamEvents & keyof paths;
export type StreamEvent<P extends StreamPath> = StreamEvents[P];
/** The path parameters of a stream's GET, as the spec declares them: { id } for a path with {id}. */
export type StreamParams<P extends StreamPath> = paths[P] extends { get: { parameters: { path?: infer X } } } ? X : never;

/** Where a stream is. busy and reconnecting end by themselves at `until` (ms since the epoch). */
export type StreamStatus =
  | { state: "connecting" }
  | { state: "open" }
  | { state: "busy"; until: number; error?: ApiError }
  | { state: "reconnecting"; until: number }
  | { state: "closed" }
  | { state: "failed"; error: ApiError };

export interface StreamOptions<P extends StreamPath> {
  /** The values of the path's parameters, each in place of its {name}. */
  params?: StreamParams<P>;
  /** Resume after this event. */
  lastEventId?: string;
  /**
   * The events after which the stream has nothing more to say (a log that
   * ends with the work it follows): the stream closes after delivering one.
   * Without them, a stream the server ends is reconnected.
   */
  endsOn?: readonly StreamEvent<P>["event"][];
  onEvent: (ev: StreamEvent<P>) => void;
  onStatus?: (s: StreamStatus) => void;
}

export interface StreamHandle {
  /** close ends the stream and frees its slot; no event or status follows. */
  close(): void;
  /** The id of the last event received: where a reconnect resumes. */
  readonly lastEventId: string | undefined;
}

/** The longest a reconnect waits after repeated drops, in ms. */
const maxBackoffMs = 30_000;

/** The shortest wait before trying again, whatever a server or proxy says, in ms. */
const minWaitMs = 1000;

/** streamUrl puts each of params in place of its {name} in path, escaped. */
export function streamUrl(path: string, params: Record<string, string | number> = {}): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(String(params[name] ?? "")));
}

/**
 * openStream follows a stream until close: it connects, delivers each
 * event, and after a refusal or a drop tries again by itself, saying so
 * through onStatus. It ends for good after an event of o.endsOn, on a 204
 * (nothing more to follow) or on a refusal that waiting will not change
 * (401, 404, ...).
 */
export function openStream<P extends StreamPath>(client: BrainClient, path: P, o: StreamOptions<P>): StreamHandle {
  const stop = new AbortController();
  // The slot held now, freed at once by close (not when the aborted fetch
  // has unwound), so a view that replaces a stream finds its slot free.
  let held: (() => void) | undefined;
  let lastEventId = o.lastEventId;
  const status = (s: StreamStatus) => {
    if (stop.signal.aborted) return;
    o.onStatus?.(s);
  };
  const url = streamUrl(path, o.params as Record<string, string | number> | undefined);
  const final = new Set<string>(o.endsOn);

  const run = async () => {
    let retryMs = 1000; // until the stream's retry: field says otherwise
    let drops = 0;
    const pause = async (s: StreamStatus & { until: number }) => {
      status(s);
      await sleep(Math.max(0, s.until - Date.now()), stop.signal);
    };
    // An address no request can be made for is a mistake, not a drop.
    try {
      new Request(client.baseUrl + url, { method: "GET" });
    } catch (e) {
      status({ state: "failed", error: { code: "invalid-request", message: e instanceof Error ? e.message : String(e), details: {} } });
      return;
    }
    while (!stop.signal.aborted) {
      status({ state: "connecting" });
      let release: (() => void) | undefined;
      try {
        release = held = client.acquireStream();
      } catch (e) {
        if (!(e instanceof LocalRateLimitError)) throw e;
        await pause({ state: "busy", until: Date.now() + 1000, error: e.envelope });
        continue;
      }
      let ended = false;
      try {
        const headers: Record<string, string> = { Accept: "text/event-stream" };
        if (lastEventId) headers["Last-Event-ID"] = lastEventId;
        const res = await client.stream(url, { headers, signal: stop.signal });
        if (res.status === 204) {
          status({ state: "closed" });
          return;
        }
        if (res.status !== 200 || !res.body) {
          const error = await envelope(res);
          const after = res.status === 429 || res.status === 503 ? retryAfterMs(res, Date.now()) : undefined;
          if (after === undefined) {
            status({ state: "failed", error });
            return;
          }
          release();
          release = undefined;
          const wait = Math.max(minWaitMs, after);
          await pause({ state: "busy", until: Date.now() + wait + Math.min(5000, wait * 0.2) * Math.random(), error });
          continue;
        }
        status({ state: "open" });
        await getBytes(
          res.body,
          getLines(
            getMessages(
              () => {}, // the id is taken with its message, once delivered
              (r) => (retryMs = r),
              (m) => {
                const ev = parse<P>(m);
                if (!ev || stop.signal.aborted) return;
                if (final.has(ev.event)) ended = true;
                try {
                  o.onEvent(ev);
                } finally {
                  // A resume starts after the last event delivered, never
                  // after one whose text was cut off by a drop.
                  if (m.id) lastEventId = m.id;
                  drops = 0;
                }
              },
            ),
          ),
        );
      } catch (e) {
        if (stop.signal.aborted) return;
        if (e instanceof LocalRateLimitError) {
          // pacing "fail-fast": the stream plane's open budget is spent here.
          release?.();
          release = undefined;
          await pause({ state: "busy", until: Date.now() + Math.max(minWaitMs, (e.envelope.details.retry_after_s ?? 1) * 1000), error: e.envelope });
          continue;
        }
        // Otherwise a drop: the connection failed or broke; try again below.
      } finally {
        release?.();
      }
      if (stop.signal.aborted) return;
      if (ended) {
        status({ state: "closed" });
        return;
      }
      // Drops in a row without an event between them wait longer each time.
      const backoff = Math.min(maxBackoffMs, Math.max(minWaitMs, retryMs) * 2 ** Math.min(drops, 5));
      drops++;
      await pause({ state: "reconnecting", until: Date.now() + backoff + backoff * 0.2 * Math.random() });
    }
  };
  // Begin after returning, so the first status reaches a caller that is
  // still wiring itself up.
  Promise.resolve().then(run).catch((e: unknown) => {
    if (stop.signal.aborted) return;
    status({ state: "failed", error: { code: "internal", message: e instanceof Error ? e.message : String(e), details: {} } });
  });

  return {
    close() {
      stop.abort();
      held?.();
    },
    get lastEventId() {
      return lastEventId;
    },
  };
}

// parse turns one SSE message into a typed event; a message without data
// (the first, which only sets retry:) is none.
function parse<P extends StreamPath>(m: EventSourceMessage): StreamEvent<P> | undefined {
  if (m.data === "" || m.event === "") return undefined;
  let data: unknown;
  try {
    data = JSON.parse(m.data);
  } catch {
    return undefined;
  }
  const ev = { event: m.event, data } as StreamEvent<P>;
  if (m.id) ev.id = m.id;
  return ev;
}

// envelope reads a refusal's error envelope, or makes one from its status.
async function envelope(res: Response): Promise<ApiError> {
  try {
    const v: unknown = await res.json();
    if (v && typeof v === "object" && "code" in v && "message" in v) return v as ApiError;
  } catch {
    // not JSON
  }
  return { code: res.status === 404 ? "not-found" : "unavailable", message: `the stream answered ${res.status}`, details: {} };
}

interface Shared {
  handle: StreamHandle;
  listeners: Set<{ onEvent: (ev: StreamEvent<"/api/v1/events">) => void; onStatus?: (s: StreamStatus) => void }>;
  last?: StreamStatus;
}

const shared = new WeakMap<BrainClient, Shared>();

/**
 * subscribeEvents shares one /api/v1/events stream among every subscriber
 * of a client (in a browser, a tab), so views that each want the caller's
 * events hold one stream slot and one connection between them. The stream
 * opens with the first subscriber and closes after the last unsubscribes.
 */
export function subscribeEvents(
  client: BrainClient,
  onEvent: (ev: StreamEvent<"/api/v1/events">) => void,
  onStatus?: (s: StreamStatus) => void,
): () => void {
  const me = { onEvent, onStatus };
  let s = shared.get(client);
  if (!s) {
    const listeners: Shared["listeners"] = new Set();
    const made: Shared = {
      listeners,
      handle: openStream(client, "/api/v1/events", {
        onEvent: (ev) => listeners.forEach((l) => l.onEvent(ev)),
        onStatus: (st) => {
          made.last = st;
          // Ended for good (a 401, say): the next subscriber opens anew.
          if ((st.state === "closed" || st.state === "failed") && shared.get(client) === made) shared.delete(client);
          listeners.forEach((l) => l.onStatus?.(st));
        },
      }),
    };
    s = made;
    shared.set(client, s);
  } else if (s.last) {
    onStatus?.(s.last);
  }
  s.listeners.add(me);
  const mine = s;
  return () => {
    if (!mine.listeners.delete(me) || mine.listeners.size > 0) return;
    mine.handle.close();
    if (shared.get(client) === mine) shared.delete(client);
  };
}
