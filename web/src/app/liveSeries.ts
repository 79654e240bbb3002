// The live chart's data: the /system/live snapshots of the last two minutes,
// as uPlot's columns (time in seconds, then one column per series).
import type { components } from "../api/schema";

export type LiveSnapshot = components["schemas"]["LiveSnapshot"];

/** The series the chart draws, in column order after time. */
export const liveFields = ["requests_per_s", "limited_per_s", "open_streams", "jobs_queued"] as const satisfies readonly (keyof LiveSnapshot)[];

export type LiveColumns = [number[], number[], number[], number[], number[]];

export function emptyColumns(): LiveColumns {
  return [[], [], [], [], []];
}

/**
 * appendSnapshot adds one snapshot and drops those older than windowS
 * seconds before it. A snapshot not newer than the last (a replay, a clock
 * step back) replaces nothing and is skipped. Returns new arrays: the old
 * ones are left as they were.
 */
export function appendSnapshot(cols: LiveColumns, snap: LiveSnapshot, windowS = 120): LiveColumns {
  const t = Date.parse(snap.at) / 1000;
  if (!Number.isFinite(t)) return cols;
  const xs = cols[0];
  const last = xs[xs.length - 1];
  if (last !== undefined && t <= last) return cols;
  let from = 0;
  while (from < xs.length && xs[from]! < t - windowS) from++;
  const next = cols.map((c) => c.slice(from)) as LiveColumns;
  next[0].push(t);
  liveFields.forEach((f, i) => next[i + 1]!.push(snap[f]));
  return next;
}
