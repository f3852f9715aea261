// The sales screen: per day and price, stakes, prizes paid, the realised payout rate against the
// planned one, the liability; two SVG charts; the regulator's export as a zip.

import { formatCents, formatStake } from "../../js/money.js";
import { api } from "./api.js";
import { payoutChart, stakesChart } from "./charts.js";
import { formatRate, t } from "./i18n.js";
import { $, busy, el, say, table } from "./shared.js";

let report = null;

function summary(r) {
  const item = (key, value, id) =>
    el("div", {}, el("dt", { text: t(key) }), el("dd", { id, text: value }));
  return [
    item("sum_stakes", formatCents(r.stakes_cents), "sum-stakes"),
    item("sum_prizes", formatCents(r.prizes_cents), "sum-prizes"),
    item("sum_payout", formatRate(r.payout_bp), "sum-payout"),
    item("sum_planned", formatRate(r.planned_payout_bp), "sum-planned"),
    item("sum_liability", formatCents(r.liability_cents), "sum-liability"),
  ];
}

function row(line) {
  return el(
    "tr",
    { dataset: { day: line.day, price: line.price_cents } },
    el("td", { text: line.day }),
    el("td", { text: formatStake(line.price_cents) }),
    el("td", { class: "num", text: String(line.plays) }),
    el("td", { class: "num", text: formatCents(line.stakes_cents) }),
    el("td", { class: "num", text: formatCents(line.prizes_cents) }),
    el("td", { class: "num", text: formatRate(line.payout_bp) }),
  );
}

function chart(holder, lines, draw) {
  if (lines.length === 0) holder.replaceChildren(el("p", { class: "note", text: t("chart_none") }));
  else holder.replaceChildren(draw());
}

export function render() {
  if (report === null) return;
  const r = report;
  $("sales-summary").replaceChildren(...summary(r));
  table("sales-rows", "sales-empty", r.lines.map(row));
  const days = new Set(r.lines.filter((l) => l.stakes_cents > 0).map((l) => l.day)).size;
  chart($("chart-stakes"), r.lines, () =>
    stakesChart(r.lines, t("chart_stakes_label", { n: r.lines.length })),
  );
  chart($("chart-payout"), r.lines, () =>
    payoutChart(
      r.lines,
      r.planned_payout_bp,
      t("chart_payout_label", { n: days, planned: formatRate(r.planned_payout_bp) }),
      t("reference", { rate: formatRate(r.planned_payout_bp) }),
    ),
  );
}

export async function refresh() {
  const found = await busy($("sales-submit"), () =>
    api.sales($("sales-since").value || null, $("sales-until").value || null),
  );
  if (found === undefined) return;
  report = found;
  render();
}

function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = el("a", { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function setUp() {
  const today = new Date().toISOString().slice(0, 10);
  $("export-from").value = today;
  $("export-to").value = today;
  $("sales-form").addEventListener("submit", (event) => {
    event.preventDefault();
    refresh();
  });
  $("export-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const from = $("export-from").value;
    const to = $("export-to").value;
    const blob = await busy($("export-submit"), () => api.exportSales(from, to));
    if (!blob) return;
    const name = `pharaon-export-${from}-${to}.zip`;
    download(blob, name);
    say(() => t("exported", { name }), "success");
  });
}
