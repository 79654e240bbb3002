// The live chart's data: the /system/live snapshots of the last five minutes
// (what the server keeps and sends first on each stream), as uPlot's columns: time in seconds, then one column per series, the
// snapshot's own numbers first and then each gauge the server's features
// register (LiveSnapshot.gauges), whatever their names.
import type { components } from "../api/schema";

export type LiveSnapshot = components["schemas"]["LiveSnapshot"];

/** The snapshot's numbers the chart draws, in column order after time. */
export const liveFields = ["requests_per_s", "limited_per_s", "open_streams"] as const satisfies readonly (keyof LiveSnapshot)[];

/** What the chart reads of a snapshot: its time, liveFields and its gauges, whichever the server's features declare. */
export type LiveSample = Pick<LiveSnapshot, "at" | (typeof liveFields)[number]> & { gauges: Readonly<Record<string, number>> };

export interface LiveColumns {
  /** The gauges drawn, in column order after liveFields: each in the order it was first seen. */
  gauges: string[];
  /** uPlot's data: times, then liveFields, then gauges; null where a snapshot lacked a gauge. */
  data: [number[], ...(number | null)[][]];
}

export function emptyColumns(): LiveColumns {
  return { gauges: [], data: [[], ...liveFields.map(() => [])] };
}

/** The seconds of snapshots the chart keeps: the five minutes the server keeps. */
export const windowSeconds = 300;

/**
 * appendSnapshot adds one snapshot and drops those older than windowS
 * seconds before it; a gauge seen for the first time gets a column, empty
 * (null) before it. A snapshot not newer than the last (the history a
 * reconnected stream sends again, a clock step back) is skipped: the
 * columns stay in order, each time once. Returns new arrays: the old ones
 * are left as they were.
 */
export function appendSnapshot(cols: LiveColumns, snap: LiveSample, windowS = windowSeconds): LiveColumns {
  const t = Date.parse(snap.at) / 1000;
  if (!Number.isFinite(t)) return cols;
  const [xs, ...ys] = cols.data;
  const last = xs[xs.length - 1];
  if (last !== undefined && t <= last) return cols;
  let from = 0;
  while (from < xs.length && xs[from]! < t - windowS) from++;
  const gauges = snap.gauges;
  const names = [...cols.gauges, ...Object.keys(gauges).filter((g) => !cols.gauges.includes(g))];
  const kept = xs.length - from;
  return {
    gauges: names,
    data: [
      [...xs.slice(from), t],
      ...liveFields.map((f, i) => [...ys[i]!.slice(from), snap[f]]),
      ...names.map((g, i) => [...(ys[liveFields.length + i]?.slice(from) ?? Array<null>(kept).fill(null)), gauges[g] ?? null]),
    ],
  };
}

/** humanise words a gauge's name for a person: queue_depth is "Queue depth". */
export function humanise(name: string): string {
  const words = name.replace(/[_-]+/g, " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}
