// Countdowns: how many whole seconds are left until a moment (ms since the
// epoch), and how the dashboard words such a wait ("12 s", "2 min 5 s").
export function secondsLeft(until: number, now: number): number {
  return Math.max(0, Math.ceil((until - now) / 1000));
}

export function formatWait(seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  const r = s % 60;
  return r === 0 ? `${m} min` : `${m} min ${r} s`;
}

// Whose limit a wait is. The caller's own: a budget counted per its
// session, API key or user (scope session, apikey, stream) or its login
// back-off (login), and a hold of the pacer on one of those. Otherwise it is
// brain's: loaded (a 503) or a budget shared with others (scope ip: everyone
// behind the same address), held for or refused.
const ownScopes = new Set(["session", "apikey", "stream", "login"]);

export function ownLimit(w: { scope?: string; held?: boolean }): boolean {
  return w.scope === undefined ? w.held === true : ownScopes.has(w.scope);
}

// The product's name as the dashboard's words give it (make rename renames it).
const product = "brain";

/**
 * The words for a wait, one per case, kept here so that a change of wording
 * or name changes every place at once. `retrying`: the client sends the
 * request again by itself; `tryAgain` and `ready`: the person does.
 */
const yours = (left: string) => `You have used your requests for now — more in ${left}`;
export const waitWords = {
  retrying: (own: boolean, left: string) => (own ? yours(left) : `${product} is busy — retrying in ${left}`),
  tryAgain: (own: boolean, left: string) => (own ? yours(left) : `${product} is busy — try again in ${left}`),
  ready: (own: boolean) => (own ? "Your requests are back — try again now" : `${product} is ready again — try again now`),
  // The login back-off counts failed tries of this user and address.
  loginWait: (own: boolean, left: string) => (own ? `Too many tries for now — you can log in again in ${left}` : `${product} is busy — try again in ${left}`),
  loginReady: (own: boolean) => (own ? "You can log in again now" : `${product} is ready again — you can log in now`),
};
