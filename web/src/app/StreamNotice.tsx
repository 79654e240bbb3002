// A live stream's state, shown in the stream's place: nothing while it is
// open, a calm countdown while it is refused (busy) or reconnecting, a plain
// message when it failed for good.
import type { StreamStatus } from "../api/streams";
import { formatWait, secondsLeft } from "./countdown";
import { useNow } from "./useNow";

export function StreamNotice({ status, what, testId }: { status: StreamStatus; what: string; testId: string }) {
  const waiting = status.state === "busy" || status.state === "reconnecting";
  const now = useNow(waiting);
  let text: string | null = null;
  switch (status.state) {
    case "connecting":
      text = `${what}: connecting…`;
      break;
    case "busy":
      text = `${what} paused — retrying in ${formatWait(secondsLeft(status.until, now))}`;
      break;
    case "reconnecting":
      text = `${what} interrupted — reconnecting in ${formatWait(secondsLeft(status.until, now))}`;
      break;
    case "failed":
      text = `${what} stopped: ${status.error.message}`;
      break;
  }
  return (
    <p className={text ? "calm stream-notice" : "stream-notice"} role="status" aria-live="polite" data-testid={testId} data-state={status.state}>
      {text}
    </p>
  );
}
