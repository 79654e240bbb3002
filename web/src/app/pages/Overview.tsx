// The overview: /api/v1/system/live followed while the page is shown (its
// stream closes with the page, and each new one starts with the last five
// minutes the server kept), charted, and the current numbers beside, with a
// number for each gauge the snapshot carries.
import { useEffect, useState } from "react";
import { openStream, type StreamStatus } from "../../api/streams";
import { checkSession, client } from "../api";
import { appendSnapshot, emptyColumns, humanise, type LiveColumns, type LiveSnapshot } from "../liveSeries";
import { StreamNotice } from "../StreamNotice";
import { LiveChart } from "./LiveChart";

const rate = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
const count = new Intl.NumberFormat();

export function Overview() {
  const [columns, setColumns] = useState<LiveColumns>(emptyColumns);
  const [latest, setLatest] = useState<LiveSnapshot | null>(null);
  const [status, setStatus] = useState<StreamStatus>({ state: "connecting" });

  useEffect(() => {
    const handle = openStream(client, "/api/v1/system/live", {
      onEvent: (ev) => {
        if (ev.event !== "system.live") return;
        setLatest(ev.data);
        setColumns((c) => appendSnapshot(c, ev.data));
      },
      onStatus: (s) => {
        setStatus(s);
        checkSession(s);
      },
    });
    return () => handle.close();
  }, []);

  const numbers: [string, string, string][] = latest
    ? [
        ["Requests/s", rate.format(latest.requests_per_s), "live-requests"],
        ["Limited/s", rate.format(latest.limited_per_s), "live-limited"],
        ["Open streams", count.format(latest.open_streams), "live-streams"],
        ...Object.entries(latest.gauges).map(([name, v]): [string, string, string] => [humanise(name), count.format(v), `live-gauge-${name}`]),
        ["Goroutines", count.format(latest.goroutines), "live-goroutines"],
        ["Heap", `${rate.format(latest.heap_bytes / 1048576)} MiB`, "live-heap"],
      ]
    : [];

  return (
    <section className="stack">
      <h1 tabIndex={-1}>Overview</h1>
      <StreamNotice status={status} what="live view" testId="live-status" />
      <dl className="numbers" data-testid="live-numbers" aria-label="Now">
        {numbers.map(([k, v, id]) => (
          <div key={id}>
            <dt>{k}</dt>
            <dd data-testid={id}>{v}</dd>
          </div>
        ))}
      </dl>
      <LiveChart columns={columns} />
      {latest && <p className="muted">Last snapshot at {new Date(latest.at).toLocaleTimeString()}.</p>}
    </section>
  );
}
