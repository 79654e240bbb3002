import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createBrainClient, type BrainClientOptions } from "./client";
import { openStream, streamUrl, subscribeEvents, type StreamStatus } from "./streams";

// A connection the test writes SSE text to, and ends or breaks.
interface Conn {
  req: Request;
  write(text: string): void;
  end(): void;
  fail(): void;
  aborted: boolean;
}

// fakeStreams answers each request with the next of replies: a Response,
// or "open" for a 200 event stream the test drives through conns.
function fakeStreams(...replies: (Response | "open")[]) {
  const conns: Conn[] = [];
  const reqs: Request[] = [];
  const fetch = async (req: Request, init?: RequestInit): Promise<Response> => {
    reqs.push(req);
    const signal = init?.signal ?? req.signal;
    const r = replies[Math.min(reqs.length - 1, replies.length - 1)]!;
    if (r !== "open") return r.clone();
    let ctl!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (ctl = c) });
    const enc = new TextEncoder();
    const conn: Conn = {
      req,
      aborted: false,
      write: (t) => ctl.enqueue(enc.encode(t)),
      end: () => ctl.close(),
      fail: () => ctl.error(new TypeError("network error")),
    };
    signal.addEventListener("abort", () => {
      conn.aborted = true;
      try {
        ctl.error(signal.reason);
      } catch {
        // already ended
      }
    });
    conns.push(conn);
    return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
  };
  return { fetch, conns, reqs };
}

const refused = (status: number, retryAfter?: string) =>
  new Response(JSON.stringify({ code: status === 429 ? "rate-limited" : "not-found", message: "no", details: { scope: "stream", policy: "streams" } }), {
    status,
    headers: { "Content-Type": "application/json", ...(retryAfter ? { "Retry-After": retryAfter } : {}) },
  });

function client(fetch: (r: Request, init?: RequestInit) => Promise<Response>, maxStreams?: number, o: Partial<BrainClientOptions> = {}) {
  return createBrainClient({ baseUrl: "http://brain.test", fetch, pacing: "off", maxStreams, ...o });
}

const states = (seen: StreamStatus[]) => seen.map((s) => s.state);

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
  vi.spyOn(Math, "random").mockReturnValue(0);
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("openStream", () => {
  it("delivers typed events, skips the message that only sets retry:, and holds a slot while open", async () => {
    const api = fakeStreams("open");
    const c = client(api.fetch);
    const events: string[] = [];
    const seen: StreamStatus[] = [];
    const h = openStream(c, "/api/v1/events", { onEvent: (ev) => events.push(`${ev.event}#${ev.id ?? ""}`), onStatus: (s) => seen.push(s) });
    await vi.advanceTimersByTimeAsync(0);
    expect(new URL(api.reqs[0]!.url).pathname).toBe("/api/v1/events");
    expect(api.reqs[0]!.headers.get("Accept")).toBe("text/event-stream");
    expect(c.pacer.openStreams()).toBe(1);
    api.conns[0]!.write('retry: 3000\n\nid: 7\nevent: apikey.created\ndata: {"id":"k"}\n\n');
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toEqual(["apikey.created#7"]);
    expect(states(seen)).toEqual(["connecting", "open"]);
    expect(h.lastEventId).toBe("7");
    h.close();
    expect(c.pacer.openStreams()).toBe(0); // at once, not once the fetch has unwound
    await vi.advanceTimersByTimeAsync(0);
    expect(api.conns[0]!.aborted).toBe(true);
    expect(c.pacer.openStreams()).toBe(0);
    expect(states(seen)).toEqual(["connecting", "open"]);
  });

  it("after a drop, waits the retry: delay and resumes with Last-Event-ID", async () => {
    const api = fakeStreams("open");
    const c = client(api.fetch);
    const seen: StreamStatus[] = [];
    openStream(c, "/api/v1/events", { onEvent: () => {}, onStatus: (s) => seen.push(s) });
    await vi.advanceTimersByTimeAsync(0);
    api.conns[0]!.write('retry: 3000\n\nid: 41\nevent: apikey.deleted\ndata: {"id":"k"}\n\n');
    await vi.advanceTimersByTimeAsync(0);
    api.conns[0]!.fail();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.at(-1)).toEqual({ state: "reconnecting", until: 1_003_000 });
    expect(c.pacer.openStreams()).toBe(0);
    await vi.advanceTimersByTimeAsync(2999);
    expect(api.reqs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(api.reqs).toHaveLength(2);
    expect(api.reqs[1]!.headers.get("Last-Event-ID")).toBe("41");
    // A second drop in a row, with no event between, waits twice as long.
    api.conns[1]!.end();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.at(-1)).toEqual({ state: "reconnecting", until: 1_003_000 + 6000 });
  });

  it("waits out a refused open as long as Retry-After says, with its slot free, then opens", async () => {
    const api = fakeStreams(refused(429, "5"), "open");
    const c = client(api.fetch);
    const seen: StreamStatus[] = [];
    openStream(c, "/api/v1/system/live", { onEvent: () => {}, onStatus: (s) => seen.push(s) });
    await vi.advanceTimersByTimeAsync(0);
    const busy = seen.at(-1);
    expect(busy?.state).toBe("busy");
    expect(busy?.state === "busy" && [busy.until, busy.error?.code, busy.error?.details.scope]).toEqual([1_005_000, "rate-limited", "stream"]);
    expect(c.pacer.openStreams()).toBe(0);
    await vi.advanceTimersByTimeAsync(4999);
    expect(api.reqs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(api.reqs).toHaveLength(2);
    expect(states(seen).at(-1)).toBe("open");
  });

  it("ends for good after an event it ends on, on 204, and on a refusal waiting will not change", async () => {
    const api = fakeStreams("open");
    const seen: StreamStatus[] = [];
    openStream(client(api.fetch), "/api/v1/events", { endsOn: ["apikey.deleted"], onEvent: () => {}, onStatus: (s) => seen.push(s) });
    await vi.advanceTimersByTimeAsync(0);
    api.conns[0]!.write('id: 9\nevent: apikey.deleted\ndata: {"id":"k"}\n\n');
    api.conns[0]!.end();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(api.reqs).toHaveLength(1);
    expect(states(seen)).toEqual(["connecting", "open", "closed"]);

    const gone = fakeStreams(new Response(null, { status: 204 }));
    const seen204: StreamStatus[] = [];
    openStream(client(gone.fetch), "/api/v1/events", { lastEventId: "9", onEvent: () => {}, onStatus: (s) => seen204.push(s) });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(gone.reqs).toHaveLength(1);
    expect(states(seen204)).toEqual(["connecting", "closed"]);

    const missing = fakeStreams(refused(404));
    const seen404: StreamStatus[] = [];
    openStream(client(missing.fetch), "/api/v1/events", { onEvent: () => {}, onStatus: (s) => seen404.push(s) });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(missing.reqs).toHaveLength(1);
    expect(seen404.at(-1)).toMatchObject({ state: "failed", error: { code: "not-found" } });
  });

  it("waits for a slot when the client's streams are all open, and takes the one freed", async () => {
    const api = fakeStreams("open");
    const c = client(api.fetch, 2);
    const a = openStream(c, "/api/v1/events", { onEvent: () => {} });
    openStream(c, "/api/v1/system/live", { onEvent: () => {} });
    const seen: StreamStatus[] = [];
    openStream(c, "/api/v1/events", { onEvent: () => {}, onStatus: (s) => seen.push(s) });
    await vi.advanceTimersByTimeAsync(0);
    expect(api.reqs).toHaveLength(2);
    expect(seen.at(-1)).toMatchObject({ state: "busy", error: { details: { scope: "stream", limit: 2 } } });
    a.close();
    await vi.advanceTimersByTimeAsync(1000);
    expect(api.reqs).toHaveLength(3);
    expect(states(seen).at(-1)).toBe("open");
    expect(c.pacer.openStreams()).toBe(2);
  });
});

describe("openStream, when the server or the network misbehaves", () => {
  it("reconnects after an event it does not end on", async () => {
    const api = fakeStreams("open");
    const seen: StreamStatus[] = [];
    openStream(client(api.fetch), "/api/v1/events", { endsOn: ["apikey.deleted"], onEvent: () => {}, onStatus: (s) => seen.push(s) });
    await vi.advanceTimersByTimeAsync(0);
    api.conns[0]!.write('id: 3\nevent: apikey.created\ndata: {"id":"k"}\n\n');
    api.conns[0]!.end();
    await vi.advanceTimersByTimeAsync(1000);
    expect(states(seen)).not.toContain("closed");
    expect(api.reqs).toHaveLength(2);
  });

  it("resumes after the last event delivered, not after an id whose event was cut off", async () => {
    const api = fakeStreams("open");
    const got: string[] = [];
    const h = openStream(client(api.fetch), "/api/v1/events", { onEvent: (ev) => got.push(ev.id ?? "") });
    await vi.advanceTimersByTimeAsync(0);
    api.conns[0]!.write('id: 5\nevent: apikey.deleted\ndata: {"id":"a"}\n\nid: 6\nevent: apikey.deleted\ndata: {"id":"b"}\n');
    await vi.advanceTimersByTimeAsync(0);
    api.conns[0]!.fail();
    await vi.advanceTimersByTimeAsync(1000);
    expect(got).toEqual(["5"]);
    expect(h.lastEventId).toBe("5");
    expect(api.reqs[1]!.headers.get("Last-Event-ID")).toBe("5");
  });

  it("waits at least a second whatever retry: or Retry-After say, and longer after each drop without an event", async () => {
    const api = fakeStreams("open");
    const seen: StreamStatus[] = [];
    openStream(client(api.fetch), "/api/v1/events", { onEvent: () => {}, onStatus: (s) => seen.push(s) });
    await vi.advanceTimersByTimeAsync(0);
    api.conns[0]!.write("retry: 0\n\n");
    api.conns[0]!.end();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.at(-1)).toEqual({ state: "reconnecting", until: 1_001_000 });
    await vi.advanceTimersByTimeAsync(1000);
    api.conns[1]!.end(); // accepted, then closed at once: a second drop in a row
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.at(-1)).toEqual({ state: "reconnecting", until: 1_001_000 + 2000 });

    const zero = fakeStreams(refused(429, "0"), "open");
    const seenZero: StreamStatus[] = [];
    openStream(client(zero.fetch), "/api/v1/events", { onEvent: () => {}, onStatus: (s) => seenZero.push(s) });
    await vi.advanceTimersByTimeAsync(999);
    expect(zero.reqs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(2000);
    expect(zero.reqs).toHaveLength(2);
  });

  it("is busy, not reconnecting, when pacing fail-fast finds the open budget spent", async () => {
    const api = fakeStreams("open");
    const c = client(api.fetch, undefined, { pacing: "fail-fast" });
    const last: StreamStatus[] = [];
    for (let i = 0; i < 21; i++) openStream(c, "/api/v1/system/live", { onEvent: () => {}, onStatus: (s) => i === 20 && last.push(s) });
    await vi.advanceTimersByTimeAsync(0);
    expect(api.reqs).toHaveLength(16); // the cap; the others wait for a slot
    expect(last.at(-1)?.state).toBe("busy");
  });

  it("fails at once, without a request, for an address no request can be made for", async () => {
    const api = fakeStreams("open");
    const seen: StreamStatus[] = [];
    openStream(client(api.fetch, undefined, { baseUrl: "" }), "/api/v1/events", { onEvent: () => {}, onStatus: (s) => seen.push(s) });
    await vi.advanceTimersByTimeAsync(5000);
    expect(api.reqs).toHaveLength(0);
    expect(seen).toMatchObject([{ state: "failed", error: { code: "invalid-request" } }]);
  });
});

describe("streamUrl", () => {
  it("puts each parameter in place of its {name}, escaped", () => {
    expect(streamUrl("/api/v1/things/{id}/log", { id: "a b/c" })).toBe("/api/v1/things/a%20b%2Fc/log");
    expect(streamUrl("/api/v1/{kind}/{id}", { kind: "x", id: 7 })).toBe("/api/v1/x/7");
    expect(streamUrl("/api/v1/events")).toBe("/api/v1/events");
  });
});

describe("subscribeEvents", () => {
  it("opens a new stream for the next subscriber once the shared one has failed for good", async () => {
    const api = fakeStreams(refused(404), "open");
    const c = client(api.fetch);
    const seen: string[] = [];
    subscribeEvents(c, () => {}, (s) => seen.push(s.state));
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.at(-1)).toBe("failed");
    subscribeEvents(c, () => {});
    await vi.advanceTimersByTimeAsync(0);
    expect(api.reqs).toHaveLength(2);
  });

  it("shares one /events stream among a client's subscribers and closes it after the last leaves", async () => {
    const api = fakeStreams("open");
    const c = client(api.fetch);
    const got: string[] = [];
    const offA = subscribeEvents(c, (ev) => got.push(`a:${ev.event}`));
    const offB = subscribeEvents(c, (ev) => got.push(`b:${ev.event}`));
    await vi.advanceTimersByTimeAsync(0);
    expect(api.reqs).toHaveLength(1);
    api.conns[0]!.write('id: 1\nevent: apikey.created\ndata: {"id":"k"}\n\n');
    await vi.advanceTimersByTimeAsync(0);
    expect(got).toEqual(["a:apikey.created", "b:apikey.created"]);
    offA();
    expect(api.conns[0]!.aborted).toBe(false);
    offB();
    await vi.advanceTimersByTimeAsync(0);
    expect(api.conns[0]!.aborted).toBe(true);
    expect(c.pacer.openStreams()).toBe(0);
    // A later subscriber opens a new one.
    subscribeEvents(c, () => {});
    await vi.advanceTimersByTimeAsync(0);
    expect(api.reqs).toHaveLength(2);
  });
});
