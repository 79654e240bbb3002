// The global, calm busy banner: while the client waits out a 429 or 503 it
// will retry (client.onBusy), "brain is busy — retrying in N s", counting
// down; gone once nothing waits. The request completes by itself.
import { useEffect, useState } from "react";
import type { Busy } from "../api/client";
import { client } from "./api";
import { formatWait, secondsLeft } from "./countdown";
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
          brain is busy — retrying in {formatWait(secondsLeft(busy.until, now))}
        </p>
      )}
    </div>
  );
}
