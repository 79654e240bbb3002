// The rate-limit panel's two sides: every budget the spec declares
// (web/src/api/budgets.ts, generated), once per policy, with the operations
// that draw from it; and what a response reported of one, brought to now.
import { operations, type Budget, type OperationId } from "../api/budgets";
import type { RateLimitReport } from "../api/client";

export interface DeclaredBudget {
  budget: Budget;
  operations: OperationId[];
}

// The planes in the order a signed-in person meets them.
const planeOrder: readonly Budget["plane"][] = ["session", "stream", "apikey", "ip", "login"];

/** declaredBudgets lists each policy once, ordered by plane (session first) then policy. */
export function declaredBudgets(): DeclaredBudget[] {
  const byPolicy = new Map<string, DeclaredBudget>();
  for (const [id, op] of Object.entries(operations) as [OperationId, (typeof operations)[OperationId]][]) {
    for (const b of op.budgets as readonly Budget[]) {
      const d = byPolicy.get(b.policy);
      if (d) {
        if (!d.operations.includes(id)) d.operations.push(id);
      } else byPolicy.set(b.policy, { budget: b, operations: [id] });
    }
  }
  const rank = (d: DeclaredBudget) => planeOrder.indexOf(d.budget.plane);
  return [...byPolicy.values()].sort((a, b) => rank(a) - rank(b) || a.budget.policy.localeCompare(b.budget.policy));
}

/** describeBudget says what a budget allows, in a few words. */
export function describeBudget(b: Budget): string {
  if ("limit" in b) return `${b.limit} per ${windowText(b.window_s)}, burst ${b.burst}`;
  if ("concurrent" in b) return `${b.concurrent} open at once`;
  return `back-off after ${b.failures} failures (${b.ip_failures} per IP), ${b.backoff_s[0]} s to ${windowText(b.backoff_s[1])}`;
}

export function windowText(s: number): string {
  if (s === 1) return "s";
  if (s === 60) return "min";
  if (s === 3600) return "h";
  if (s % 3600 === 0) return `${s / 3600} h`;
  if (s % 60 === 0) return `${s / 60} min`;
  return `${s} s`;
}

/**
 * projectReport brings a report to now (ms): the count grows back at limit
 * per window_s from when it was reported, for reset_s seconds (then it is
 * full: burst, when known), and the wait until full shrinks with it. A cap on
 * open requests (no reset_s) stays as reported.
 */
export function projectReport(r: RateLimitReport, now: number, burst?: number): { remaining: number; resetIn?: number } {
  if (r.reset_s === undefined) return { remaining: r.remaining };
  const elapsed = Math.min(r.reset_s, Math.max(0, (now - r.at) / 1000));
  const grown = r.limit && r.window_s ? Math.floor((elapsed * r.limit) / r.window_s) : 0;
  const remaining = burst !== undefined && elapsed === r.reset_s ? burst : Math.min(burst ?? Infinity, r.remaining + grown);
  return { remaining, resetIn: r.reset_s - elapsed };
}
