// A clock for countdowns: the current time in ms, ticking every `everyMs`
// while `active`, and standing still (no timer) otherwise.
import { useEffect, useState } from "react";

export function useNow(active: boolean, everyMs = 250): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    setNow(Date.now());
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [active, everyMs]);
  return now;
}
