// Inline SVG charts drawn from the sales report: every attribute is set with setAttribute (the
// CSP forbids style attributes); the colours come from classes in console.css.

import { formatCents, formatStake } from "../../js/money.js";
import { formatRate } from "./i18n.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 640;
const HEIGHT = 260;
const PAD = { left: 78, right: 16, top: 16, bottom: 40 };
const TICKS = 4;

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  node.append(...children);
  return node;
}

function titled(node, text) {
  node.append(svg("title", {}, text));
  return node;
}

function frame(label) {
  return svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: "img",
    "aria-label": label,
    preserveAspectRatio: "xMidYMid meet",
  });
}

/** Horizontal grid lines and their labels, from 0 to `top` (in the chart's unit). */
function yAxis(root, top, format) {
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  for (let i = 0; i <= TICKS; i += 1) {
    const value = Math.round((top * i) / TICKS);
    const y = PAD.top + plotHeight - (plotHeight * i) / TICKS;
    root.append(
      svg("line", { class: "grid", x1: PAD.left, x2: WIDTH - PAD.right, y1: y, y2: y }),
      svg(
        "text",
        { class: "tick", x: PAD.left - 6, y: y + 4, "text-anchor": "end" },
        format(value),
      ),
    );
  }
}

function shortDay(iso) {
  const [, month, day] = iso.split("-");
  return `${day}/${month}`;
}

/**
 * Stakes per day, one bar per price in each day's group.
 * `lines`: the report's lines ({day, price_cents, stakes_cents}), sorted by day then price.
 */
export function stakesChart(lines, label) {
  const root = frame(label);
  const days = [...new Set(lines.map((l) => l.day))];
  const prices = [...new Set(lines.map((l) => l.price_cents))].sort((a, b) => a - b);
  const top = Math.max(100, ...lines.map((l) => l.stakes_cents));
  yAxis(root, top, formatCents);
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const groupWidth = plotWidth / Math.max(1, days.length);
  const barWidth = Math.min(48, (groupWidth * 0.8) / Math.max(1, prices.length));
  days.forEach((day, d) => {
    const start = PAD.left + d * groupWidth + (groupWidth - barWidth * prices.length) / 2;
    for (const line of lines.filter((l) => l.day === day)) {
      const p = prices.indexOf(line.price_cents);
      const height = (plotHeight * line.stakes_cents) / top;
      const bar = svg("rect", {
        class: `bar price-${p % 3}`,
        x: start + p * barWidth,
        y: PAD.top + plotHeight - height,
        width: Math.max(1, barWidth - 2),
        height,
        "data-day": day,
        "data-price": line.price_cents,
      });
      root.append(
        titled(
          bar,
          `${day} — ${formatStake(line.price_cents)} : ${formatCents(line.stakes_cents)}`,
        ),
      );
    }
    root.append(
      svg(
        "text",
        {
          class: "tick",
          x: PAD.left + (d + 0.5) * groupWidth,
          y: HEIGHT - 22,
          "text-anchor": "middle",
        },
        shortDay(day),
      ),
    );
  });
  prices.forEach((price, p) => {
    const x = PAD.left + p * 90;
    root.append(
      svg("rect", { class: `bar price-${p % 3}`, x, y: HEIGHT - 12, width: 10, height: 10 }),
      svg("text", { class: "tick", x: x + 14, y: HEIGHT - 3 }, formatStake(price)),
    );
  });
  return root;
}

/**
 * The realised payout rate per day (all prices), a point per day with stakes, against a
 * dashed reference line at `plannedBp`. `lines` as for stakesChart; rates in basis points.
 */
export function payoutChart(lines, plannedBp, label, referenceText) {
  const root = frame(label);
  const byDay = new Map();
  for (const line of lines) {
    const sums = byDay.get(line.day) ?? { stakes: 0, prizes: 0 };
    sums.stakes += line.stakes_cents;
    sums.prizes += line.prizes_cents;
    byDay.set(line.day, sums);
  }
  const points = [...byDay.entries()]
    .filter(([, s]) => s.stakes > 0)
    .map(([day, s]) => ({ day, bp: Math.floor((s.prizes * 10000) / s.stakes) }));
  const top = Math.max(10000, plannedBp, ...points.map((p) => p.bp));
  yAxis(root, top, formatRate);
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const yOf = (bp) => PAD.top + plotHeight - (plotHeight * bp) / top;
  const step = plotWidth / Math.max(1, points.length);
  const xOf = (i) => PAD.left + (i + 0.5) * step;
  const ref = yOf(plannedBp);
  root.append(
    svg("line", { class: "reference", x1: PAD.left, x2: WIDTH - PAD.right, y1: ref, y2: ref }),
    svg(
      "text",
      { class: "tick reference-label", x: WIDTH - PAD.right, y: ref - 5, "text-anchor": "end" },
      referenceText,
    ),
  );
  if (points.length > 1) {
    root.append(
      svg("polyline", {
        class: "rate-line",
        points: points.map((p, i) => `${xOf(i)},${yOf(p.bp)}`).join(" "),
      }),
    );
  }
  points.forEach((p, i) => {
    const dot = svg("circle", {
      class: "point",
      cx: xOf(i),
      cy: yOf(p.bp),
      r: 5,
      "data-day": p.day,
      "data-bp": p.bp,
    });
    root.append(
      titled(dot, `${p.day} : ${formatRate(p.bp)}`),
      svg(
        "text",
        { class: "tick", x: xOf(i), y: HEIGHT - 22, "text-anchor": "middle" },
        shortDay(p.day),
      ),
    );
  });
  return root;
}
