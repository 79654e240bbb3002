// An operation's x-rate-limit, in words, for the top of its description
// in the docs UI (docs.js). Plain JavaScript: the browser loads it as it
// is, and vitest tests it (ratelimits.test.js).
//
// The entries' shapes are the ones the server declares: a budget (limit,
// window_s, burst) of a plane (session, apikey, ip, stream), a cap of open
// streams (concurrent), and the login back-off (failures, ip_failures,
// backoff_s); applies_to narrows a budget to some callers.

const units = [
  [86400, "day"],
  [3600, "hour"],
  [60, "minute"],
  [1, "second"],
];

// windowWords: 1 → "per second", 60 → "per minute", 7200 → "per 2 hours".
export function windowWords(seconds) {
  for (const [size, unit] of units) {
    if (seconds % size === 0) {
      const n = seconds / size;
      return n === 1 ? `per ${unit}` : `per ${n} ${unit}s`;
    }
  }
  return `per ${seconds} seconds`;
}

// durationWords: 1 → "1 s", 90 → "90 s", 900 → "15 min", 7200 → "2 h".
export function durationWords(seconds) {
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds >= 60 && seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

// Who a plane's budget is kept for.
const keptPer = { session: "per session", apikey: "per API key", ip: "per IP", stream: "per caller" };

// The policy a plane's budget has when it is the plane's own; any other
// is a named budget, which the words name.
const ownPolicy = { session: "session", apikey: "apikey", ip: "ip", stream: "stream-opens" };

// Who a budget narrowed by applies_to applies to.
const appliesTo = { unauthenticated: "unauthenticated callers", forbidden: "callers refused with 403" };

function rate(e) {
  let s = `${e.limit} ${windowWords(e.window_s)}`;
  if (e.burst) s += `, burst ${e.burst}`;
  return s;
}

// entryWords is one x-rate-limit entry in words.
export function entryWords(e) {
  if (e.plane === "login" && "failures" in e) {
    const ip = e.ip_failures ? ` (${e.ip_failures} from one IP)` : "";
    const [first, max] = e.backoff_s ?? [];
    const wait = first === undefined ? "" : `, each further attempt waits ${durationWords(first)}, doubling${max ? ` up to ${durationWords(max)}` : ""}`;
    return `login back-off: after ${e.failures} failed logins in a row for a username${ip}${wait}; a success resets the username's count`;
  }
  if ("concurrent" in e) {
    const per = e.policy === "streams" ? "per caller" : e.policy === "streams-per-user" ? "per user (all its sessions and keys)" : `(${e.policy})`;
    return `at most ${e.concurrent} open at once ${per}`;
  }
  if ("limit" in e && "window_s" in e) {
    if (e.plane === "stream") {
      const named = e.policy === ownPolicy.stream ? "" : e.policy === "stream-opens-per-user" ? " per user (all its sessions and keys)" : ` (${e.policy})`;
      return `opens${named}: ${rate(e)}`;
    }
    let s = `${rate(e)}, ${keptPer[e.plane] ?? `per ${e.plane}`}`;
    const notes = [];
    if (e.policy !== (ownPolicy[e.plane] ?? e.plane)) notes.push(`the ${e.policy} budget`);
    if (e.applies_to) notes.push(appliesTo[e.applies_to] ?? `applies to ${e.applies_to}`);
    if (notes.length) s += ` (${notes.join("; ")})`;
    return s;
  }
  return `${e.plane} ${e.policy}: ${JSON.stringify(e)}`; // a shape this page does not know yet
}

// rateLimitWords is an operation's x-rate-limit in words, "" for none:
// "Rate limits: " and its entries, " · " between them; the stream plane's
// entries together, "; " between them.
export function rateLimitWords(entries) {
  if (!Array.isArray(entries) || entries.length === 0) return "";
  const parts = [];
  let stream = null;
  for (const e of entries) {
    if (e.plane === "stream") {
      if (stream === null) {
        stream = [];
        parts.push(stream);
      }
      stream.push(entryWords(e));
    } else {
      parts.push(entryWords(e));
    }
  }
  return "Rate limits: " + parts.map((p) => (Array.isArray(p) ? p.join("; ") : p)).join(" · ");
}
