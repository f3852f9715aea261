// The history: the last plays with stake, lot and balances; each one viewable in full, and each
// finished one verifiable: its proof, checked here, must lead to its block's published root.

import { api } from "./api.js";
import { PlayView } from "./board.js";
import { resumePlay } from "./game.js";
import { checkProof } from "./proof.js";
import { checkReceipt, kept } from "./receipt.js";
import { formatCents, formatStake } from "./money.js";
import { formatWhen, t } from "./i18n.js";
import { busy, el, on, sayError, state } from "./ui.js";

const PAGE = 10;

let plays = [];
let nextBefore = null;
let detail = null; // the play shown in full
let verdict = null; // the last check: { key, params, why, ok } (kept to redraw in the language)

const $ = (id) => document.getElementById(id);

export function initHistory(showView) {
  $("history-more").addEventListener("click", () => load(true));
  on("lang", () => {
    renderTable();
    renderDetail();
    renderVerdict();
  });
  on("logged-out", () => {
    plays = [];
    nextBefore = null;
    detail = null;
    verdict = null;
    renderVerdict();
  });
  // A play that changed on the board changes its row too.
  on("play", (play) => {
    if (!play) return;
    const i = plays.findIndex((p) => p.play_id === play.play_id);
    if (i >= 0) plays[i] = play;
    else if (plays.length) plays.unshift(play);
    renderTable();
  });
  resume = (play) => {
    showView("game");
    resumePlay(play).catch((error) => sayError(error));
  };
}

let resume = () => {};

/** Fetch the newest plays (or, with `more`, the next older page). */
export async function load(more = false) {
  await busy([$("history-more")], async () => {
    try {
      const page = await api.plays(PAGE, more ? nextBefore : null);
      plays = more ? [...plays, ...page.plays] : page.plays;
      nextBefore = page.next_before;
    } catch (error) {
      sayError(error);
      return;
    }
    renderTable();
  });
}

function money(cents) {
  return cents === null || cents === undefined ? "—" : formatCents(cents);
}

function renderTable() {
  const body = $("history-rows");
  $("history-empty").hidden = plays.length > 0;
  $("history-table").hidden = plays.length === 0;
  $("history-more").hidden = !nextBefore;
  body.replaceChildren(
    ...plays.map((play) => {
      const action = play.finished
        ? [
            el("button", {
              type: "button",
              text: t("view"),
              "aria-label": t("view_play", { id: play.play_id }),
              onclick: () => {
                detail = play;
                renderDetail(true);
              },
            }),
            el("button", {
              type: "button",
              class: "verify",
              text: t("verify"),
              "aria-label": t("verify_play", { id: play.play_id }),
              onclick: (event) => verify(play, event.currentTarget),
            }),
          ]
        : el("button", {
            type: "button",
            class: "primary",
            text: t("resume"),
            "aria-label": t("resume_play", { id: play.play_id }),
            onclick: () => resume(play),
          });
      const cells = [
        ["col_date", formatWhen(play.created_at)],
        ["col_mode", t(play.mode === "auto" ? "auto" : "jouer")],
        ["col_stake", formatStake(play.stake_cents)],
        ["col_lot", lotText(play)],
        ["col_before", money(play.balance_before_cents)],
        ["col_after", money(play.balance_after_cents)],
      ];
      return el(
        "tr",
        { dataset: { playId: play.play_id } },
        cells.map(([key, text]) => el("td", { dataset: { label: t(key) }, text })),
        el("td", { dataset: { label: t("col_action") } }, action),
      );
    }),
  );
}

/** The lot, « en cours » while a « Jouer » play is unfinished, and said when the server
 * finished a play the player had left. */
function lotText(play) {
  if (!play.finished) return t("unfinished");
  const lot = formatCents(play.prize_cents);
  return play.finished_by_server ? `${lot} (${t("finished_by_server")})` : lot;
}

/** Fetch the play's proof and the published blocks, and check the proof here. */
async function verify(play, button) {
  verdict = { key: "proof_checking", params: { id: play.play_id } };
  renderVerdict();
  await busy([button], async () => {
    let proof;
    let blocks;
    try {
      [proof, blocks] = await Promise.all([api.proof(play.play_id), api.blocks()]);
    } catch (error) {
      verdict = null;
      renderVerdict();
      sayError(error);
      return;
    }
    const block = blocks.find((b) => b.block_id === play.block_id);
    let result = await checkProof(proof, play, block);
    let held = null; // the kept receipt's word on the same sale, if this browser kept it
    const receipt = kept(play.play_id);
    if (result.ok && receipt) {
      try {
        const key = await api.receiptKey();
        held = await checkReceipt(receipt, proof, key.public_key);
      } catch (error) {
        verdict = null;
        renderVerdict();
        sayError(error);
        return;
      }
      if (!held.ok) result = held;
    }
    if (result.ok) {
      verdict = {
        ok: true,
        key: "proof_ok",
        params: {
          id: play.play_id,
          serial: play.serial,
          lot: formatCents(play.prize_cents),
          block: `${block.emission} n° ${block.block_number} (${formatStake(block.price_cents)})`,
          root: block.merkle_root,
        },
        receipt: held ? formatWhen(held.time) : null,
      };
    } else {
      verdict = {
        ok: false,
        key: "proof_refused",
        params: { id: play.play_id },
        why: result.reason,
        whyParams: result.params,
      };
    }
    renderVerdict();
  });
}

/** A refusal's reason `why` in words, with its values (a receipt's field, named here). */
function reasonText(why, values = {}) {
  return t(why, values.field ? { ...values, what: t(`receipt_field_${values.field}`) } : values);
}

function renderVerdict() {
  const line = $("proof-result");
  if (!verdict) {
    line.hidden = true;
    line.replaceChildren();
    return;
  }
  const why = verdict.why ? reasonText(verdict.why, verdict.whyParams) : null;
  const params = why ? { ...verdict.params, why } : verdict.params;
  line.textContent = t(verdict.key, params);
  if (verdict.receipt) line.textContent += ` ${t("receipt_ok", { when: verdict.receipt })}`;
  line.className = `proof-result${verdict.ok === true ? " good" : verdict.ok === false ? " bad" : ""}`;
  line.dataset.verdict = verdict.ok === undefined ? "checking" : verdict.ok ? "good" : "bad";
  line.hidden = false;
}

function renderDetail(focus = false) {
  const holder = $("history-detail");
  if (!detail || !state.rules) {
    holder.replaceChildren();
    holder.hidden = true;
    return;
  }
  const view = new PlayView({ rules: state.rules });
  view.render(detail);
  const heading = el("h3", {
    tabindex: "-1",
    text: t("detail_title", { id: detail.play_id, when: formatWhen(detail.created_at) }),
  });
  const close = el("button", {
    type: "button",
    text: t("close"),
    onclick: () => {
      const id = detail.play_id;
      detail = null;
      renderDetail();
      document.querySelector(`tr[data-play-id="${id}"] button`)?.focus();
    },
  });
  holder.replaceChildren(
    el("div", { class: "detail-head" }, heading, close),
    el("p", {
      class: "play-ref",
      text: t("play_ref", {
        id: detail.play_id,
        stake: formatStake(detail.stake_cents),
        serial: detail.serial,
      }),
    }),
    view.root,
    ...(detail.ticket ? [el("p", { class: "ticket" }, `${t("ticket")} `, el("code", { text: detail.ticket }))] : []),
  );
  holder.hidden = false;
  if (focus) heading.focus();
}
