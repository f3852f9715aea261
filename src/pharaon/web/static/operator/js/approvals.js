// An auditor's sign-off before sale (docs/operations.md): a loaded block stays off sale until an
// auditor who did not load it approves it. « Vérifier » shows the server's own verification of
// the stored units (GET /operator/blocks/{id}/verification): the lots against the prize table,
// the hashes, the near-miss measures and the order tests; « Approuver » (POST
// /operator/blocks/{id}/approval) runs it again on the server and puts the block on sale.

import { formatCents } from "../../js/money.js";
import { api } from "./api.js";
import { actorText, formatWhen, locale, measureText, orderTestText, t } from "./i18n.js";
import { $, busy, el, isAuditor, say, state } from "./shared.js";

let shown = null; // { block, figures }: what the verification panel shows
let refreshBlocks = async () => {};

/** Who approved: an operator by their e-mail, anyone else (a command's "auditor:…") in
 * words. */
function who(actor) {
  const operator = /^operator:(.+)$/.exec(actor ?? "");
  return operator ? operator[1] : actorText(actor ?? "");
}

function mayApprove(b) {
  return (
    isAuditor() &&
    b.state === "loaded" &&
    b.approved_at === null &&
    b.loaded_by !== `operator:${state.me?.email}`
  );
}

/** What a block's state cell says of its approval: awaiting it, or by whom and when. */
export function status(b) {
  if (b.approved_at !== null) {
    const text = t("approval_by", { who: who(b.approved_by), when: formatWhen(b.approved_at) });
    return el("small", { class: "approval approved", text });
  }
  if (b.state !== "loaded") return null;
  return el("small", { class: "approval awaiting", text: t("approval_awaiting") });
}

function approveButton(b, extra = "") {
  return el("button", {
    type: "button",
    class: `primary small approve-block ${extra}`.trim(),
    text: t("approval_approve"),
    "aria-label": t("approval_approve_label", { id: b.block_id }),
    dataset: { blockId: b.block_id },
    onclick: (event) => approve(b, event.currentTarget),
  });
}

/** A loaded block's buttons: « Vérifier » for everyone, « Approuver » for an auditor who did
 * not load it. */
export function buttons(b) {
  if (b.state !== "loaded" || b.approved_at !== null) return [];
  const verifying = el("button", {
    type: "button",
    class: "small verify-block",
    text: t("approval_verify"),
    "aria-label": t("approval_verify_label", { id: b.block_id }),
    dataset: { blockId: b.block_id },
    onclick: (event) => verify(b, event.currentTarget),
  });
  return mayApprove(b) ? [verifying, approveButton(b)] : [verifying];
}

function number(value, digits) {
  return new Intl.NumberFormat(locale(), { maximumFractionDigits: digits }).format(value);
}

function pValue(p) {
  return new Intl.NumberFormat(locale(), { maximumSignificantDigits: 3 }).format(p);
}

/** What a failed verification found: how many problems, said here, and the server's own
 * sentences (English, as `pharaon verify` writes them) folded under a technical detail. */
function problems(found) {
  return el(
    "details",
    { class: "problems" },
    el("summary", { text: t("approval_problems", { count: found.length }) }),
    el("ul", { lang: "en" }, ...found.map((p) => el("li", { text: p }))),
  );
}

function matched(ok) {
  return t(ok ? "approval_matched" : "approval_differs");
}

function grid(className, heads, rows) {
  return el(
    "div",
    { class: "table-wrap" },
    el(
      "table",
      { class: `data ${className}` },
      el(
        "thead",
        {},
        el("tr", {}, ...heads.map(([text, num]) => el("th", { scope: "col", class: num ? "num" : "", text }))),
      ),
      el("tbody", {}, ...rows),
    ),
  );
}

function lotsTable(figures) {
  return grid(
    "verification-lots",
    [[t("approval_col_lot")], [t("approval_col_found"), true], [t("approval_col_table"), true]],
    figures.lots.map((x) =>
      el(
        "tr",
        { class: x.found === x.table ? "" : "differs" },
        el("td", { text: formatCents(x.amount_cents) }),
        el("td", { class: "num", text: String(x.found) }),
        el("td", { class: "num", text: String(x.table) }),
      ),
    ),
  );
}

function measuresTable(fairness) {
  return grid(
    "verification-measures",
    [
      [t("approval_col_measure")],
      [t("approval_col_losing"), true],
      [t("approval_col_winning"), true],
      [t("approval_col_gap"), true],
    ],
    fairness.measures.map((m) =>
      el(
        "tr",
        { class: m.alike ? "" : "differs", dataset: { name: m.name } },
        el("td", { title: m.name, text: measureText(m.name) }),
        el("td", { class: "num", text: `${number(m.losing_pct, 2)}\u00a0%` }),
        el("td", { class: "num", text: `${number(m.winning_pct, 2)}\u00a0%` }),
        el("td", { class: "num gap", text: number(m.gap_pp, 2) }),
      ),
    ),
  );
}

function orderTable(fairness) {
  return grid(
    "verification-order",
    [[t("approval_col_test")], [t("approval_col_p"), true]],
    fairness.order.map((x) =>
      el(
        "tr",
        { class: x.passed ? "" : "differs", dataset: { name: x.name } },
        el("td", { title: x.name, text: orderTestText(x.name) }),
        el("td", { class: "num", text: pValue(x.p_value) }),
      ),
    ),
  );
}

export function render() {
  const panel = $("verification");
  if (shown === null) {
    panel.hidden = true;
    panel.replaceChildren();
    return;
  }
  const { block, figures } = shown;
  const fairness = figures.fairness;
  const parts = [
    el("h3", { text: t("approval_title", { id: block.block_id }) }),
    el("p", {
      class: `verdict ${figures.ok ? "ok" : "failed"}`,
      text: t(figures.ok ? "approval_ok" : "approval_failed", { units: figures.units }),
    }),
    figures.problems.length ? problems(figures.problems) : null,
    el(
      "p",
      { class: "note hashes" },
      t("approval_hashes", {
        sha: matched(figures.units_sha256_matched),
        root: matched(figures.merkle_root_matched),
      }),
    ),
    el("h4", { text: t("approval_lots") }),
    lotsTable(figures),
  ];
  if (fairness) {
    parts.push(
      el("h4", { text: t("approval_measures") }),
      el("p", {
        class: "note",
        text: t("approval_measures_note", { gap: number(fairness.gap_limit_pp, 2) }),
      }),
      // Said only when a measure is outside its tolerance (each measure says whether it is).
      fairness.measures.every((m) => m.alike)
        ? null
        : el("p", { class: "note differs", text: t("approval_fairness_small") }),
      measuresTable(fairness),
      el("h4", { text: t("approval_order") }),
      el("p", {
        class: "note",
        text: t("approval_order_note", { level: pValue(fairness.order_test_level) }),
      }),
      fairness.order.every((x) => x.passed)
        ? null
        : el("p", { class: "note differs", text: t("approval_order_flagged") }),
      orderTable(fairness),
    );
  }
  const close = el("button", {
    type: "button",
    class: "verification-close",
    text: t("approval_close"),
    onclick: () => {
      shown = null;
      render();
    },
  });
  const current = mayApprove(block) && figures.ok ? approveButton(block, "in-panel") : null;
  parts.push(el("div", { class: "confirm" }, current, close));
  panel.replaceChildren(...parts.filter((part) => part !== null));
  panel.hidden = false;
}

async function verify(b, button) {
  const figures = await busy(button, () => api.verifyBlock(b.block_id));
  if (figures === undefined) return;
  shown = { block: b, figures };
  render();
  $("verification").scrollIntoView({ block: "nearest" });
}

async function approve(b, button) {
  const done = await busy(button, () => api.approveBlock(b.block_id));
  if (!done) return;
  shown = null;
  render();
  const key = done.state === "open" ? "approval_done_open" : "approval_done_next";
  say(() => t(key, { id: b.block_id }), "success");
  await refreshBlocks();
}

/** Forget the panel of a block no longer awaiting approval (after a refresh). */
export function load(blocks) {
  if (shown === null) return;
  const now = blocks.find((b) => b.block_id === shown.block.block_id);
  if (!now || now.state !== "loaded" || now.approved_at !== null) shown = null;
  else shown = { ...shown, block: now };
}

export function setUp(refresh) {
  refreshBlocks = refresh;
}
