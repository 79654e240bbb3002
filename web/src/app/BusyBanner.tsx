// The global, calm busy banner: while the client waits out a 429 or 503 it
// will retry, or its pacer holds a request back (client.onBusy), it says so
// with a countdown, in words for whose limit it is (countdown.ts): "brain is
// busy — retrying in N s", or "You have used your requests for now — more in
// N s". Gone once nothing waits; the request completes by itself.
import { useEffect, useState } from "react";
import type { Busy } from "../api/client";
import { client } from "./api";
import { formatWait, ownLimit, secondsLeft, waitWords } from "./countdown";
import { useNow } from "./useNow";

export function BusyBanner() {
  const [busy, setBusy] = useState<Busy | null>(null);
  useEffect(() => client.onBusy(setBusy), []);
  const now = useNow(busy !== null);
  // The live region stays in the page so that screen readers announce what
  // appears in it; the banner itself comes and goes.
  return (
    <div className="busy-region" role="status" aria-live="polite">
      {busy && (
        <p className="calm busy-banner" data-testid="busy-banner">
          {waitWords.retrying(ownLimit(busy), formatWait(secondsLeft(busy.until, now)))}
        </p>
      )}
    </div>
  );
}
