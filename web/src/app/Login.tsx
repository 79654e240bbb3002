// The login page: username and password, POST /api/v1/auth/login. A 401 is
// "wrong username or password"; a 429 (the login back-off, or the ip budget)
// or 503 is a calm wait with a countdown, after which the form may be sent
// again.
import { useState, type FormEvent, type ReactNode } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { $api, meKey } from "./api";
import { asApiError, errorMessage } from "./errors";
import { formatWait, ownLimit, secondsLeft, waitWords } from "./countdown";
import { useNow } from "./useNow";

export function Login() {
  const qc = useQueryClient();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [waitUntil, setWaitUntil] = useState<number | null>(null);
  const login = $api.useMutation("post", "/api/v1/auth/login", {
    onSuccess: () => qc.resetQueries({ queryKey: meKey }),
    onError: (e) => {
      const api = asApiError(e);
      if (api?.code === "rate-limited" || api?.code === "unavailable") setWaitUntil(Date.now() + 1000 * Math.max(1, api.details.retry_after_s ?? 1));
    },
  });
  const now = useNow(waitUntil !== null);
  const left = waitUntil === null ? 0 : secondsLeft(waitUntil, now);
  const waiting = left > 0;

  function submit(ev: FormEvent) {
    ev.preventDefault();
    if (waiting || login.isPending) return;
    setWaitUntil(null);
    login.mutate({ body: { username, password } });
  }

  const api = login.isError ? asApiError(login.error) : undefined;
  let message: ReactNode = null;
  if (login.isError) {
    if (api?.code === "unauthenticated") message = <p className="notice" role="alert" data-testid="login-error">wrong username or password</p>;
    else if (api?.code === "rate-limited" || api?.code === "unavailable")
      message = (
        <p className="calm" role="status" data-testid="login-busy">
          {waiting ? waitWords.loginWait(ownLimit(api.details), formatWait(left)) : waitWords.loginReady(ownLimit(api.details))}
        </p>
      );
    else message = <p className="notice" role="alert" data-testid="login-error">{errorMessage(login.error)}</p>;
  }

  return (
    <main className="login">
      <form className="card stack" onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">Log in to brain</h1>
        <label>
          Username
          <input name="username" autoComplete="username" required maxLength={64} value={username} onChange={(e) => setUsername(e.target.value)} data-testid="login-username" autoFocus />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete="current-password" required maxLength={1024} value={password} onChange={(e) => setPassword(e.target.value)} data-testid="login-password" />
        </label>
        <button type="submit" disabled={waiting || login.isPending} data-testid="login-submit">
          {login.isPending ? "Logging in…" : "Log in"}
        </button>
        {message}
      </form>
    </main>
  );
}
