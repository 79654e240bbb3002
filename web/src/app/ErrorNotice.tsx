// A failed call, for a person: the envelope's message and, for a 422 or
// 400, each problem's location and message. Plain colours, never alarm.
import { asApiError, errorMessage } from "./errors";

export function ErrorNotice({ error, testId = "error" }: { error: unknown; testId?: string }) {
  const api = asApiError(error);
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
