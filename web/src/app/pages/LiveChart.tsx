// The overview's chart: uPlot drawing the live columns (requests/s and
// limited/s on the left axis, open streams and each gauge on the right),
// as wide as its box, redrawn when the columns change and made anew when a
// gauge appears. Its time ticks fall on whole seconds (the snapshots are a
// second apart), and its legend shows the latest values unless hovered.
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { humanise, type LiveColumns } from "../liveSeries";

const height = 240;

// The gauges' colours, in turn.
const gaugeColours = ["#7a5aa8", "#a8475a", "#2f8f8f", "#8a6d1f"];

// The steps, in seconds, uPlot may choose between time ticks: whole seconds only.
const secondSteps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600];
const clock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });

// showLatest puts the last snapshot's values in the legend while the cursor
// is off the plot (uPlot would show "--", or keep the point it last showed
// as new ones arrive); setData calls it through the setLegend hook.
function showLatest(u: uPlot) {
  const last = u.data[0].length - 1;
  if ((u.cursor.left ?? -1) < 0 && last >= 0 && u.legend.idx !== last) u.setLegend({ idx: last }, false);
}

function options(width: number, gauges: readonly string[]): uPlot.Options {
  const fromZero: uPlot.Scale["range"] = (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))];
  return {
    width,
    height,
    cursor: { drag: { x: false, y: false } },
    hooks: { setLegend: [showLatest] },
    scales: { x: { time: true }, rate: { range: fromZero }, count: { range: fromZero } },
    series: [
      { value: (_u, t) => (t == null ? "--" : clock.format(t * 1000)) },
      { label: "requests/s", scale: "rate", stroke: "#2f6fb0", width: 2 },
      { label: "limited/s", scale: "rate", stroke: "#b07a1f", width: 2 },
      { label: "open streams", scale: "count", stroke: "#3d8a5a", width: 2, dash: [6, 3] },
      ...gauges.map((g, i) => ({ label: humanise(g).toLowerCase(), scale: "count", stroke: gaugeColours[i % gaugeColours.length], width: 2, dash: [2, 3] })),
    ],
    axes: [
      { stroke: "#555", incrs: secondSteps, space: 80, values: (_u, ticks) => ticks.map((t) => clock.format(t * 1000)) },
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
  const gauges = columns.gauges.join("\n");

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const u = new uPlot(options(Math.max(200, el.clientWidth), latest.current.gauges), latest.current.data, el);
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [gauges]);

  useEffect(() => {
    plot.current?.setData(columns.data);
  }, [columns]);

  const named = ["Requests per second", "limited per second", "open streams", ...columns.gauges.map((g) => humanise(g).toLowerCase())];
  return (
    <figure className="chart">
      <div
        ref={box}
        role="img"
        aria-label={`${named.slice(0, -1).join(", ")} and ${named.at(-1)} over the last five minutes`}
        data-testid="live-chart"
        data-points={columns.data[0].length}
      />
    </figure>
  );
}
