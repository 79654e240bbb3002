// A failed call, for a person: the envelope's message and, for a 422 or
// 400, each problem's location and message. Plain colours, never alarm. A
// refusal that waiting cures (429, 503: a call the client does not retry,
// such as creating a key, or one whose wait passed the retry cap) is a calm
// status with a countdown, not an alert.
import { useState } from "react";
import { LocalRateLimitError } from "../api/client";
import { asApiError, errorMessage } from "./errors";
import { formatWait, ownLimit, secondsLeft, waitWords } from "./countdown";
import { useNow } from "./useNow";

export function ErrorNotice({ error, testId = "error" }: { error: unknown; testId?: string }) {
  const api = asApiError(error);
  if (api?.code === "rate-limited" || api?.code === "unavailable") {
    // The pacer's refusal (pacing fail-fast) is always of the caller's own count.
    const own = ownLimit({ scope: api.details.scope, held: error instanceof LocalRateLimitError });
    return <BusyNotice retryAfterS={api.details.retry_after_s} own={own} testId={testId} />;
  }
  const problems = api?.details.errors ?? [];
  return (
    <div className="notice" role="alert" data-testid={testId}>
      <p>{errorMessage(error)}</p>
      {problems.length > 0 && (
        <ul className="problems">
          {problems.map((p, i) => (
            <li key={i}>
              <code>{p.location}</code>: {p.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function BusyNotice({ retryAfterS, own, testId }: { retryAfterS?: number; own: boolean; testId: string }) {
  const [until] = useState(() => Date.now() + 1000 * Math.max(1, retryAfterS ?? 1));
  const left = secondsLeft(until, useNow(Date.now() < until));
  return (
    <p className="calm" role="status" data-testid={testId} data-busy="">
      {left > 0 ? waitWords.tryAgain(own, formatWait(left)) : waitWords.ready(own)}
    </p>
  );
}
