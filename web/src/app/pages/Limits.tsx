// The rate-limit panel: for each budget the spec declares (plane, limit per
// window, burst), what brain's responses last reported of it (the client's
// rateLimits(), kept live by onRateLimits), projected to now with the page's
// clock: what is left and when it is full again. The dashboard signs in with
// a session, so the API-key plane's budgets are never its own: they are
// listed apart.
import { useEffect, useState } from "react";
import type { RateLimitReport } from "../../api/client";
import { client } from "../api";
import { declaredBudgets, describeBudget, projectReport, windowText, type DeclaredBudget } from "../budgets";
import { formatWait } from "../countdown";
import { useNow } from "../useNow";

const declared = declaredBudgets();
const own = declared.filter((d) => d.budget.plane !== "apikey");
const others = declared.filter((d) => d.budget.plane === "apikey");

export function Limits() {
  const [reports, setReports] = useState<RateLimitReport[]>(() => client.rateLimits());
  useEffect(() => {
    setReports(client.rateLimits());
    return client.onRateLimits(setReports);
  }, []);
  const now = useNow(true, 1000);
  const undeclared = reports.filter((r) => !declared.some((d) => d.budget.policy === r.policy));

  return (
    <section className="stack">
      <h1 tabIndex={-1}>Rate limits</h1>
      <p className="muted">
        What the spec declares for each budget, beside what brain's answers to this tab last reported, counted on to now. A budget this tab has not drawn from yet shows no report.
      </p>
      <h2 id="limits-own">Budgets this browser draws from</h2>
      <p className="muted">Its session’s; and, for logging in and what it sends before, its address’s and its login tries’.</p>
      <Table rows={[...own, ...undeclared]} reports={reports} now={now} labelledBy="limits-own" testId="rate-limits" />
      <h2 id="limits-other">Other budgets: for API keys</h2>
      <p className="muted">Requests made with an API key draw from these instead of a session's.</p>
      <Table rows={others} reports={reports} now={now} labelledBy="limits-other" testId="rate-limits-other" />
    </section>
  );
}

function Table({ rows, reports, now, labelledBy, testId }: { rows: (DeclaredBudget | RateLimitReport)[]; reports: RateLimitReport[]; now: number; labelledBy: string; testId: string }) {
  return (
    <div className="table-box">
      <table className="limits" data-testid={testId} aria-labelledby={labelledBy}>
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
          {rows.map((x) =>
            "budget" in x ? (
              <Row key={x.budget.policy} d={x} r={reports.find((r) => r.policy === x.budget.policy)} now={now} />
            ) : (
              <Row key={x.policy} r={x} now={now} />
            ),
          )}
        </tbody>
      </table>
    </div>
  );
}

function Row({ d, r, now }: { d?: DeclaredBudget; r: RateLimitReport | undefined; now: number }) {
  const policy = d?.budget.policy ?? r?.policy ?? "";
  // The declared burst caps the count, unless the server runs other settings.
  const burst = d && r && "burst" in d.budget && !differs(d, r) ? d.budget.burst : undefined;
  const p = r && projectReport(r, now, burst);
  return (
    <tr data-testid={`limit-${policy}`}>
      <th scope="row">{policy}</th>
      <td data-label="Plane">{d?.budget.plane ?? "—"}</td>
      <td data-label="Declared" className="declared" title={d ? `used by ${d.operations.join(", ")}` : undefined}>
        {d ? describeBudget(d.budget) : "not in the spec"}
        {r && differs(d, r) && <span className="muted small"> (brain reports {reportedText(r)})</span>}
      </td>
      <td data-label="Remaining" data-testid={`limit-${policy}-remaining`}>
        {p ? p.remaining : "—"}
      </td>
      <td data-label="Full again in">{p?.resetIn !== undefined ? formatWait(p.resetIn) : "—"}</td>
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
