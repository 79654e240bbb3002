// The docs UI's rate limits in words (ratelimits.js): each shape the spec
// declares, the windows, and every operation of ../../../openapi.json.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { durationWords, entryWords, rateLimitWords, windowWords } from "./ratelimits.js";

const spec = JSON.parse(readFileSync(new URL("../../../openapi.json", import.meta.url), "utf8"));
const op = (path, method) => spec.paths[path][method]["x-rate-limit"];

describe("windowWords", () => {
  it("names the usual windows and counts the others", () => {
    expect(windowWords(1)).toBe("per second");
    expect(windowWords(60)).toBe("per minute");
    expect(windowWords(3600)).toBe("per hour");
    expect(windowWords(86400)).toBe("per day");
    expect(windowWords(7200)).toBe("per 2 hours");
    expect(windowWords(120)).toBe("per 2 minutes");
    expect(windowWords(90)).toBe("per 90 seconds");
  });
});

describe("durationWords", () => {
  it("takes the largest whole unit", () => {
    expect(durationWords(1)).toBe("1 s");
    expect(durationWords(90)).toBe("90 s");
    expect(durationWords(900)).toBe("15 min");
    expect(durationWords(3600)).toBe("1 h");
  });
});

describe("rateLimitWords", () => {
  it("says nothing for an operation without limits", () => {
    expect(rateLimitWords(undefined)).toBe("");
    expect(rateLimitWords([])).toBe("");
    expect(rateLimitWords(op("/api/v1/health", "get"))).toBe("");
  });

  it("reads a caller's operation: session, API key, and the IP for unauthenticated callers", () => {
    expect(rateLimitWords(op("/api/v1/auth/me", "get"))).toBe(
      "Rate limits: 120 per minute, burst 60, per session · 120 per minute, burst 60, per API key · " +
        "30 per minute, burst 30, per IP (unauthenticated callers)",
    );
  });

  it("names an operation's own budgets, per hour and per second", () => {
    const own = [
      { plane: "session", policy: "session", limit: 120, window_s: 60, burst: 60 },
      { plane: "apikey", policy: "uploads", limit: 100, window_s: 3600, burst: 100 },
      { plane: "apikey", policy: "uploads-burst", limit: 10, window_s: 1, burst: 10 },
      { plane: "ip", policy: "ip", limit: 30, window_s: 60, burst: 30, applies_to: "unauthenticated" },
    ];
    expect(rateLimitWords(own)).toBe(
      "Rate limits: 120 per minute, burst 60, per session · 100 per hour, burst 100, per API key (the uploads budget) · " +
        "10 per second, burst 10, per API key (the uploads-burst budget) · 30 per minute, burst 30, per IP (unauthenticated callers)",
    );
  });

  it("reads the budgets a 403 draws from", () => {
    expect(rateLimitWords(op("/api/v1/apikeys", "get"))).toContain("120 per minute, burst 60, per API key (callers refused with 403)");
  });

  it("reads a stream's caps and open budgets together", () => {
    expect(rateLimitWords(op("/api/v1/events", "get"))).toBe(
      "Rate limits: at most 16 open at once per caller; at most 64 open at once per user (all its sessions and keys); " +
        "opens: 60 per minute, burst 20; opens per user (all its sessions and keys): 240 per minute, burst 80 · " +
        "30 per minute, burst 30, per IP (unauthenticated callers)",
    );
  });

  it("reads the login back-off", () => {
    expect(rateLimitWords(op("/api/v1/auth/login", "post"))).toBe(
      "Rate limits: 30 per minute, burst 30, per IP · login back-off: after 5 failed logins in a row for a username " +
        "(20 from one IP), each further attempt waits 1 s, doubling up to 15 min; a success resets the username's count",
    );
  });

  it("shows a shape it does not know as its JSON, never as undefined", () => {
    expect(entryWords({ plane: "quota", policy: "bytes", bytes: 5 })).toBe('quota bytes: {"plane":"quota","policy":"bytes","bytes":5}');
  });

  it("reads every operation of the spec in words it knows", () => {
    let seen = 0;
    for (const [path, item] of Object.entries(spec.paths)) {
      for (const [method, o] of Object.entries(item)) {
        const entries = o["x-rate-limit"];
        if (!entries) continue;
        seen++;
        const words = rateLimitWords(entries);
        expect(words, `${method} ${path}`).toMatch(/^Rate limits: /);
        expect(words, `${method} ${path}`).not.toMatch(/undefined|NaN|\{/);
        expect(words.split(/ · |; (?=at most|opens)/).length, `${method} ${path}`).toBe(entries.length);
      }
    }
    expect(seen).toBeGreaterThan(10);
  });
});
