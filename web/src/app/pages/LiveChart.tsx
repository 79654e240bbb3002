// The overview's chart: uPlot drawing the live columns (requests/s and
// limited/s on the left axis, open streams and jobs queued on the right),
// as wide as its box, redrawn when the columns change.
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { LiveColumns } from "../liveSeries";

const height = 240;

function options(width: number): uPlot.Options {
  const fromZero: uPlot.Scale["range"] = (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))];
  return {
    width,
    height,
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true }, rate: { range: fromZero }, count: { range: fromZero } },
    series: [
      {},
      { label: "requests/s", scale: "rate", stroke: "#2f6fb0", width: 2 },
      { label: "limited/s", scale: "rate", stroke: "#b07a1f", width: 2 },
      { label: "open streams", scale: "count", stroke: "#3d8a5a", width: 2, dash: [6, 3] },
      { label: "jobs queued", scale: "count", stroke: "#7a5aa8", width: 2, dash: [2, 3] },
    ],
    axes: [
      { stroke: "#555" },
      { scale: "rate", label: "per second", stroke: "#555", size: 50 },
      { scale: "count", label: "count", side: 1, stroke: "#555", size: 50, grid: { show: false } },
    ],
  };
}

export function LiveChart({ columns }: { columns: LiveColumns }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const latest = useRef(columns);
  latest.current = columns;

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const u = new uPlot(options(Math.max(200, el.clientWidth)), latest.current, el);
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, []);

  useEffect(() => {
    plot.current?.setData(columns);
  }, [columns]);

  return (
    <figure className="chart">
      <div ref={box} role="img" aria-label="Requests per second, limited per second, open streams and jobs queued over the last two minutes" data-testid="live-chart" />
    </figure>
  );
}
