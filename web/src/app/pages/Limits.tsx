// The rate-limit panel: for each budget the spec declares (plane, limit per
// window, burst), what brain's responses last reported of it (the client's
// rateLimits(), kept live by onRateLimits): what is left and when it is
// full again.
import { useEffect, useState } from "react";
import type { RateLimitReport } from "../../api/client";
import { client } from "../api";
import { declaredBudgets, describeBudget, windowText, type DeclaredBudget } from "../budgets";
import { formatWait } from "../countdown";
import { useNow } from "../useNow";

const declared = declaredBudgets();

export function Limits() {
  const [reports, setReports] = useState<RateLimitReport[]>(() => client.rateLimits());
  useEffect(() => {
    setReports(client.rateLimits());
    return client.onRateLimits(setReports);
  }, []);
  const now = useNow(true, 1000);
  const byPolicy = new Map(reports.map((r) => [r.policy, r]));
  const undeclared = reports.filter((r) => !declared.some((d) => d.budget.policy === r.policy));

  return (
    <section className="stack">
      <h1 tabIndex={-1}>Rate limits</h1>
      <p className="muted">
        What the spec declares for each budget, beside what brain's answers to this tab last reported. A budget this tab has not drawn from yet shows no report.
      </p>
      <div className="table-box">
        <table className="limits" data-testid="rate-limits" aria-label="Rate limits">
          <thead>
            <tr>
              <th scope="col">Policy</th>
              <th scope="col">Plane</th>
              <th scope="col">Declared</th>
              <th scope="col">Remaining</th>
              <th scope="col">Full again in</th>
              <th scope="col">Reported</th>
            </tr>
          </thead>
          <tbody>
            {declared.map((d) => (
              <Row key={d.budget.policy} d={d} r={byPolicy.get(d.budget.policy)} now={now} />
            ))}
            {undeclared.map((r) => (
              <Row key={r.policy} r={r} now={now} />
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function Row({ d, r, now }: { d?: DeclaredBudget; r: RateLimitReport | undefined; now: number }) {
  const policy = d?.budget.policy ?? r?.policy ?? "";
  const resetIn = r?.reset_s !== undefined ? Math.max(0, r.reset_s - (now - r.at) / 1000) : undefined;
  return (
    <tr data-testid={`limit-${policy}`}>
      <th scope="row">{policy}</th>
      <td data-label="Plane">{d?.budget.plane ?? "—"}</td>
      <td data-label="Declared" title={d ? `used by ${d.operations.join(", ")}` : undefined}>
        {d ? describeBudget(d.budget) : "not in the spec"}
        {r && differs(d, r) && <span className="muted small"> (brain reports {reportedText(r)})</span>}
      </td>
      <td data-label="Remaining" data-testid={`limit-${policy}-remaining`}>
        {r ? r.remaining : "—"}
      </td>
      <td data-label="Full again in">{resetIn !== undefined ? formatWait(resetIn) : "—"}</td>
      <td data-label="Reported">{r ? `${formatWait((now - r.at) / 1000)} ago` : "not yet"}</td>
    </tr>
  );
}

// differs says whether the running server's policy (RateLimit-Policy) is
// not what the spec declares: its settings were changed from the defaults.
function differs(d: DeclaredBudget | undefined, r: RateLimitReport): boolean {
  if (r.limit === undefined) return false;
  if (!d) return true;
  const b = d.budget;
  if ("limit" in b) return b.limit !== r.limit || (r.window_s !== undefined && b.window_s !== r.window_s);
  if ("concurrent" in b) return b.concurrent !== r.limit;
  return false;
}

function reportedText(r: RateLimitReport): string {
  return r.window_s !== undefined ? `${r.limit} per ${windowText(r.window_s)}` : `${r.limit}`;
}
