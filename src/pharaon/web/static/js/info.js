// Information: remaining prizes per stake, the published blocks and their commitments, and the
// rules, all from the API (GET /prizes/remaining, /blocks, /rules).

import { api, ApiError } from "./api.js";
import { formatCents, formatStake } from "./money.js";
import { formatChoice, formatWhen, symbolName, t } from "./i18n.js";
import { symbolSvg } from "./symbols.js";
import { oddsText } from "./landing.js";
import { el, on, sayError, state } from "./ui.js";

const $ = (id) => document.getElementById(id);

let remaining = new Map(); // stake cents → [{prize_cents, remaining}] or null (none on sale)
let blocks = null; // GET /blocks, once fetched

export function initInfo() {
  on("lang", renderInfo);
}

/** Fetch what is left in the blocks on sale, then draw everything. */
export async function loadInfo() {
  renderInfo();
  const prices = state.rules?.prices_cents ?? [];
  const found = new Map();
  try {
    for (const cents of prices) {
      try {
        found.set(cents, await api.remaining(cents));
      } catch (error) {
        // No open block at that price: say so in its table rather than fail the page.
        if (!(error instanceof ApiError) || error.status === 401) throw error;
        found.set(cents, null);
      }
    }
    blocks = await api.blocks();
  } catch (error) {
    sayError(error);
    return;
  }
  remaining = found;
  renderInfo();
}

function table(caption, headers, rows, className = "") {
  return el(
    "table",
    { class: className },
    el("caption", { text: caption }),
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col", text: h })))),
    el(
      "tbody",
      {},
      rows.map((row) =>
        el(
          "tr",
          {},
          row.map((cell, i) =>
            el(i === 0 ? "th" : "td", i === 0 ? { scope: "row" } : {}, cell),
          ),
        ),
      ),
    ),
  );
}

function hash(value) {
  return value ? el("code", { class: "hash", text: value }) : t("not_given");
}

function blocksTable() {
  if (blocks === null) return el("p", { text: t("loading") });
  if (blocks.length === 0) return el("p", { class: "note", text: t("blocks_none") });
  // One card per block: the hashes are too long for the columns of a table.
  return el(
    "div",
    { class: "blocks" },
    blocks.map((b) =>
      el(
        "article",
        { class: "block", dataset: { blockId: b.block_id } },
        el("h3", {
          text: `${t("col_block")} ${b.emission} n° ${b.block_number}${b.test ? ` ${t("test_block")}` : ""} — ${formatStake(b.price_cents)} — ${t(`state_${b.state}`)}`,
        }),
        el(
          "dl",
          {},
          [
            ["col_loaded", formatWhen(b.loaded_at)],
            ["col_root", hash(b.merkle_root)],
            ["col_units_sha", hash(b.units_sha256)],
            ["col_vendor_key", hash(b.vendor_key_commitment)],
            ["col_operator_key", hash(b.operator_key_commitment)],
          ].flatMap(([key, value]) => [el("dt", { text: t(key) }), el("dd", {}, value)]),
        ),
      ),
    ),
  );
}

/** The bonus's winning shapes (the server's, GET /rules), each drawn as its four cells. */
function bonusShapes(rules) {
  const shapes = (rules.bonus_shapes ?? []).map((shape) => {
    const rows = Math.max(...shape.cells.map(([r]) => r));
    const columns = Math.max(...shape.cells.map(([, c]) => c));
    const filled = new Set(shape.cells.map(([r, c]) => `${r},${c}`));
    const cells = [];
    for (let r = 1; r <= rows; r += 1) {
      for (let c = 1; c <= columns; c += 1) {
        cells.push(el("span", { class: filled.has(`${r},${c}`) ? "on" : "off" }));
      }
    }
    const label = t("bonus_shape", { name: shape.name });
    return el(
      "div",
      { class: "shape", dataset: { shape: shape.name } },
      el("div", { class: `shape-cells cols-${columns}`, role: "img", "aria-label": label }, ...cells),
      el("span", { class: "shape-name", text: shape.name }),
    );
  });
  return [el("figcaption", { text: t("bonus_shapes") }), el("div", { class: "shapes" }, ...shapes)];
}

export function renderInfo() {
  const rules = state.rules;
  if (!rules) return;
  const prices = rules.prices_cents;

  $("remaining-tables").replaceChildren(
    ...prices.map((cents) => {
      const rows = remaining.get(cents);
      const caption = `${t("stake")} ${formatStake(cents)}`;
      if (rows === undefined) return el("p", { text: `${caption} : ${t("loading")}` });
      if (rows === null || rows.length === 0) {
        return el("p", { class: "note", text: t("remaining_none", { stake: formatStake(cents) }) });
      }
      return table(
        caption,
        [t("lot"), t("remaining_count")],
        rows.map((r) => [formatCents(r.prize_cents), r.remaining.toLocaleString("fr-FR")]),
        "remaining",
      );
    }),
  );

  $("blocks-table").replaceChildren(blocksTable());

  const stakes = formatChoice(prices.map(formatStake)); // the rules' prices, not a copy of them
  $("rules-text").replaceChildren(...t("rules_text", { prices: stakes }).map((text) => el("p", { text })));
  $("rules-odds").textContent = t("landing_odds", { odds: oddsText(rules) }); // as the landing says

  const symbolRows = rules.symbols.map((s) => [
    el(
      "span",
      { class: "symbol-name" },
      el("span", { class: `cell mini sym-${s.code}`, "aria-hidden": "true" }, symbolSvg(s.code)),
      symbolName(rules, s.code),
    ),
    formatCents(s.line_cents),
    s.bonus_cents === null || s.bonus_cents === undefined ? t("no_gain") : formatCents(s.bonus_cents),
  ]);
  $("symbols-table").replaceChildren(
    table(t("symbols_title"), [t("col_symbol"), t("col_line"), t("col_bonus")], symbolRows),
  );

  $("bonus-shapes").replaceChildren(...bonusShapes(rules));

  const prizeRows = rules.prizes.map((p) => [
    p.lots.toLocaleString("fr-FR"),
    ...prices.map((cents) => formatCents((p.amount_cents * cents) / 100)),
    p.cumulation_only ? t("yes") : "",
  ]);
  $("prizes-table").replaceChildren(
    table(
      t("prizes_title"),
      [t("col_lots"), ...prices.map((c) => t("col_amount", { stake: formatStake(c) })), t("col_cumul")],
      prizeRows,
    ),
  );
}
