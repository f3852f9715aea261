// The blocks screen: every block's sales and remaining prizes; an admin loads a block file and
// deactivates a block (an analyst sees neither control; the server refuses them with 403); an
// auditor verifies a loaded block and approves it for sale (approvals.js).

import { formatCents, formatStake } from "../../js/money.js";
import { api } from "./api.js";
import * as approvals from "./approvals.js";
import { formatCount, formatPace, formatRate, t } from "./i18n.js";
import * as keys from "./keys.js";
import { $, busy, el, isAdmin, isAuditor, say, table } from "./shared.js";

let blocks = [];
let watch = null; // GET /operator/stock
let chosen = null; // the block id the deactivation form is for

function lots(remaining) {
  if (remaining.length === 0) return t("no_lot");
  return remaining.map(([lot, n]) => `${formatCents(lot)} × ${n}`).join(", ");
}

function row(b) {
  const state = t(`state_${b.state}`);
  const testTag = b.is_test ? el("span", { class: "tag", text: t("test_block") }) : null;
  const button = el("button", {
    type: "button",
    class: "danger small deactivate",
    text: t("deactivate"),
    "aria-label": t("deactivate_label", { id: b.block_id }),
    dataset: { blockId: b.block_id },
    hidden: !isAdmin() || b.state === "deactivated" || b.state === "sold_out",
    onclick: () => choose(b.block_id),
  });
  return el(
    "tr",
    { dataset: { blockId: b.block_id } },
    el("td", { text: t("block_ref", { id: b.block_id, number: b.block_number }) }),
    el("td", {}, b.emission, testTag),
    el("td", { text: formatStake(b.price_cents) }),
    el(
      "td",
      { class: `state state-${b.state}` },
      state,
      b.deactivation_reason
        ? el("small", { class: "reason", text: ` — ${b.deactivation_reason}` })
        : null,
      approvals.status(b),
    ),
    el("td", { class: "num", text: formatCount(b.block_size) }),
    el("td", { class: "num sold", text: formatCount(b.sold) }),
    el("td", { class: "num remaining", text: formatCount(b.remaining) }),
    el("td", { class: "lots", text: lots(b.remaining_lots) }),
    el("td", {}, button, ...approvals.buttons(b), keys.cell(b)),
  );
}


function stockRow(line) {
  return el(
    "tr",
    { dataset: { price: line.price_cents } },
    el("td", { text: formatStake(line.price_cents) }),
    el("td", { class: "num", text: formatCount(line.on_sale) }),
    el("td", { class: "num", text: formatCount(line.blocks_behind) }),
    el("td", { class: "num", text: formatCount(line.units_behind) }),
    el("td", { class: "num", text: formatCount(line.sold_last_day) }),
    el("td", { class: "num hours", text: formatPace(line.hours_left) }),
  );
}

/** An alert in words, from its figures (the server's detail is English, for the logs). */
function alertText(alert) {
  const price = formatStake(alert.price_cents);
  if (alert.kind === "low_stock") {
    const line = watch.stock.find((s) => s.price_cents === alert.price_cents);
    const pace =
      line.hours_left === null
        ? t("alert_no_sale")
        : t("alert_hours", { hours: formatPace(line.hours_left) });
    const units = formatCount(line.on_sale + line.units_behind);
    return t("alert_low_stock", { price, units, hours: pace });
  }
  if (alert.kind === "payout_band") {
    const p = watch.payouts.find((x) => x.price_cents === alert.price_cents);
    return t("alert_payout_band", {
      price,
      payout: formatRate(p.payout_bp),
      units: formatCount(p.units),
      low: formatRate(p.band_low_bp),
      high: formatRate(p.band_high_bp),
    });
  }
  const lot = watch.large_lots.find((x) => alert.detail.startsWith(`play ${x.play_id} `));
  return t("alert_large_lot", {
    amount: formatCents(lot.prize_cents),
    price,
    play: lot.play_id,
    player: lot.player_id,
  });
}

function renderStock() {
  if (watch === null) return;
  $("stock-rows").replaceChildren(...watch.stock.map(stockRow));
  $("alerts").replaceChildren(
    ...watch.alerts.map((a) =>
      el("li", { class: `alert alert-${a.kind}`, dataset: { kind: a.kind } }, alertText(a)),
    ),
  );
  $("alerts-none").hidden = watch.alerts.length > 0;
}

export function render() {
  renderStock();
  table("blocks-rows", "blocks-empty", blocks.map(row));
  $("upload-form").hidden = !isAdmin();
  $("analyst-note").hidden = isAdmin();
  $("analyst-note").dataset.i18n = isAuditor() ? "auditor_note" : "analyst_note";
  $("analyst-note").textContent = t($("analyst-note").dataset.i18n);
  if (chosen !== null) $("deactivate-title").textContent = t("deactivate_title", { id: chosen });
  keys.render();
  approvals.render();
}

export async function refresh() {
  const [listed, watched] = await Promise.all([
    busy(null, () => api.blocks()),
    busy(null, () => api.stock()),
  ]);
  if (listed === undefined) return;
  blocks = listed;
  await keys.load(blocks);
  approvals.load(blocks);
  if (watched !== undefined) watch = watched;
  render();
}

function choose(blockId) {
  chosen = blockId;
  $("deactivate-form").hidden = false;
  $("deactivate-title").textContent = t("deactivate_title", { id: blockId });
  $("deactivate-reason").value = "";
  $("deactivate-reason").focus();
}

function close() {
  chosen = null;
  $("deactivate-form").hidden = true;
}

export function setUp() {
  $("deactivate-cancel").addEventListener("click", close);
  $("deactivate-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const blockId = chosen;
    const reason = $("deactivate-reason").value.trim();
    if (blockId === null || !reason) return;
    const done = await busy($("deactivate-submit"), async () => {
      await api.deactivate(blockId, reason);
      return true;
    });
    if (!done) return;
    close();
    say(() => t("deactivated", { id: blockId }), "success");
    await refresh();
  });
  keys.setUp(refresh);
  approvals.setUp(refresh);
  $("upload-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = $("upload-file").files[0];
    if (!file) return;
    const loaded = await busy($("upload-submit"), () => api.upload(file));
    if (!loaded) return;
    $("upload-form").reset();
    say(() => t("uploaded", { id: loaded.block_id }), "success");
    await refresh();
  });
}
