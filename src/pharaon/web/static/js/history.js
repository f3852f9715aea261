// The history: the last plays with stake, lot and balances; each one viewable in full.

import { api } from "./api.js";
import { PlayView } from "./board.js";
import { resumePlay } from "./game.js";
import { formatCents, formatStake } from "./money.js";
import { formatWhen, t } from "./i18n.js";
import { busy, el, on, sayError, state } from "./ui.js";

const PAGE = 10;

let plays = [];
let nextBefore = null;
let detail = null; // the play shown in full

const $ = (id) => document.getElementById(id);

export function initHistory(showView) {
  $("history-more").addEventListener("click", () => load(true));
  on("lang", () => {
    renderTable();
    renderDetail();
  });
  on("logged-out", () => {
    plays = [];
    nextBefore = null;
    detail = null;
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
    resumePlay(play);
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
        ? el("button", {
            type: "button",
            text: t("view"),
            "aria-label": t("view_play", { id: play.play_id }),
            onclick: () => {
              detail = play;
              renderDetail(true);
            },
          })
        : el("button", {
            type: "button",
            class: "primary",
            text: t("resume"),
            "aria-label": t("resume_play", { id: play.play_id }),
            onclick: () => resume(play),
          });
      const cells = [
        ["col_date", formatWhen(play.created_at)],
        ["col_stake", formatStake(play.stake_cents)],
        ["col_lot", play.finished ? formatCents(play.prize_cents) : t("unfinished")],
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
