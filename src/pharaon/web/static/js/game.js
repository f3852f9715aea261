// The game: stake, « Jouer » / « Auto », uncovering the grids, resuming an unfinished play.

import { api, ApiError, newIdempotencyKey } from "./api.js";
import { PlayView } from "./board.js";
import { keep } from "./receipt.js";
import { formatStake } from "./money.js";
import { t } from "./i18n.js";
import { busy, clearMessage, el, emit, on, say, sayError, state } from "./ui.js";

const STAKE_KEY = "pharaon.stake";
const PLAY_KEY = "pharaon.play"; // the play on the board, so a reload brings it back
// The grids this browser showed of an unfinished play (`pharaon.shown.<play id>`: a JSON list):
// grids 1 to 3 are shown by reads, which the server does not keep, so a reload or a closed tab
// resumes the play where it stopped from here.
const SHOWN_KEY = "pharaon.shown.";

let view = null;
let queue = Promise.resolve();
const pending = new Set(); // grids pressed whose answer has not come yet

const $ = (id) => document.getElementById(id);

export function initGame() {
  $("jouer").addEventListener("click", () => press("jouer"));
  $("auto").addEventListener("click", () => press("auto"));
  on("lang", () => {
    renderStakes();
    renderGame();
  });
  on("play", () => {
    $("game-hint").textContent =
      state.play && !state.play.finished ? t("finish_first") : t("jouer_hint");
  });
  on("logged-out", () => {
    state.play = null;
    sessionStorage.removeItem(PLAY_KEY);
    forgetShown();
  });
}

/** The stake choices, from the rules' prices (one source of truth). */
export function renderStakes() {
  const holder = $("stakes");
  const prices = state.rules?.prices_cents ?? [];
  const stored = Number(localStorage.getItem(STAKE_KEY));
  const chosen = prices.includes(stored) ? stored : prices[0];
  holder.replaceChildren(
    ...prices.map((cents) => {
      const id = `stake-${cents}`;
      const input = el("input", {
        type: "radio",
        name: "stake",
        id,
        value: cents,
        checked: cents === chosen,
        onchange: () => localStorage.setItem(STAKE_KEY, String(cents)),
      });
      return el("span", { class: "stake" }, input, el("label", { for: id, text: formatStake(cents) }));
    }),
  );
}

function chosenStake() {
  const input = document.querySelector('input[name="stake"]:checked');
  return input ? Number(input.value) : state.rules.prices_cents[0];
}

/** One press of « Jouer » or « Auto »: one idempotency key, reused only by « Réessayer ». */
function press(mode) {
  if (state.play && !state.play.finished) {
    say("finish_first");
    view?.nextCover()?.focus();
    return;
  }
  send(chosenStake(), mode, newIdempotencyKey());
}

async function send(stakeCents, mode, key) {
  await busy([$("jouer"), $("auto")], async () => {
    clearMessage();
    let play;
    try {
      play = await api.buy(stakeCents, mode, key);
      keep(play);
    } catch (error) {
      sayError(error, { stakeCents, charges: true, retry: () => send(stakeCents, mode, key) });
      return;
    }
    await showNewPlay(play);
  });
}

async function showNewPlay(play) {
  sessionStorage.setItem(PLAY_KEY, String(play.play_id));
  state.depositsDuringPlay = 0;
  if (play.finished) {
    // Auto: draw it covered, then let it uncover itself.
    state.play = { ...play, finished: false, grids: [null, null, null, null] };
    renderGame();
    state.play = play;
    await view.update(play, { stagger: true });
    await finished();
  } else {
    state.play = play;
    renderGame();
    view.nextCover()?.focus();
  }
  emit("play", play);
}

/** A press on grid `grid`: queued, so quick presses on several grids are all taken in order. */
function reveal(grid, origin) {
  if (pending.has(grid) || !state.play || state.play.grids[grid - 1]) return;
  pending.add(grid);
  queue = queue
    .then(() => revealNow(grid, origin))
    .catch((error) => sayError(error))
    .finally(() => pending.delete(grid));
}

async function revealNow(grid, origin) {
  const play = state.play;
  if (!play || play.grids[grid - 1]) return;
  // The last covered grid ends the play: one write uncovers every grid and moves the lot.
  // Before it, a grid is only shown: a read, which the server need not keep.
  const last = play.grids.filter((codes) => codes === null).length === 1;
  let next;
  try {
    if (last) {
      next = await api.finish(play.play_id);
    } else {
      next = withGrid(play, grid, (await api.grid(play.play_id, grid)).codes);
    }
  } catch (error) {
    sayError(error, { retry: () => reveal(grid, {}) });
    return;
  }
  if (state.play?.play_id !== play.play_id) return; // the board moved on meanwhile
  if (next.finished) forgetShown(play.play_id);
  else remember(next);
  clearMessage();
  state.play = next;
  const done = view.update(next, { origin });
  if (next.finished) {
    await done;
    await finished();
  } else if (!document.activeElement?.matches("button.cover")) {
    view.nextCover(grid)?.focus();
  }
  emit("play", next);
}

/** `play` with grid `grid`'s `codes` shown. */
function withGrid(play, grid, codes) {
  return { ...play, grids: play.grids.map((shown, i) => (i === grid - 1 ? codes : shown)) };
}

/** Keep which grids of the unfinished `play` this browser showed. */
function remember(play) {
  const shown = play.grids.flatMap((codes, i) => (codes === null ? [] : [i + 1]));
  localStorage.setItem(SHOWN_KEY + play.play_id, JSON.stringify(shown));
}

/** Forget the grids shown of play `playId`, or of every play (a log-out). */
function forgetShown(playId = null) {
  const keys =
    playId === null
      ? Object.keys(localStorage).filter((key) => key.startsWith(SHOWN_KEY))
      : [SHOWN_KEY + playId];
  for (const key of keys) localStorage.removeItem(key);
}

/** The unfinished `play` with the grids this browser showed of it before (read again). */
async function withShown(play) {
  if (!play || play.finished) return play;
  let shown = [];
  try {
    shown = JSON.parse(localStorage.getItem(SHOWN_KEY + play.play_id) ?? "[]");
  } catch {
    // Not ours: shown as the server has it.
  }
  for (const grid of Array.isArray(shown) ? shown : []) {
    if (Number.isInteger(grid) && grid >= 1 && grid <= 4 && play.grids[grid - 1] === null) {
      play = withGrid(play, grid, (await api.grid(play.play_id, grid)).codes);
    }
  }
  return play;
}

/** All four uncovered: the balance catches up with the lot. */
async function finished() {
  state.depositsDuringPlay = 0;
  if (state.play.balance_after_cents !== null && state.me) {
    state.me = { ...state.me, balance_cents: state.play.balance_after_cents };
  }
  emit("me");
  view.lotNode()?.focus();
  try {
    state.me = await api.me();
    emit("me");
  } catch {
    // The balance from the play stands; the next request says what is wrong.
  }
}

/** Draw the game area for `state.play` (or the welcome line when there is none). */
export function renderGame() {
  const holder = $("play-holder");
  const ref = $("play-ref");
  const hint = $("game-hint");
  const play = state.play;
  hint.textContent = play && !play.finished ? t("finish_first") : t("jouer_hint");
  if (!play || !state.rules) {
    view = null;
    ref.textContent = "";
    holder.replaceChildren(el("p", { class: "welcome", text: t("welcome") }));
    return;
  }
  ref.textContent = t("play_ref", {
    id: play.play_id,
    stake: formatStake(play.stake_cents),
    serial: play.serial,
  });
  view = new PlayView({ rules: state.rules, interactive: true, onReveal: reveal });
  view.render(play);
  holder.replaceChildren(view.root);
}

/** Put `play` (unfinished, from the history) back on the board. */
export async function resumePlay(play) {
  play = await withShown(play);
  state.play = play;
  state.depositsDuringPlay = 0;
  sessionStorage.setItem(PLAY_KEY, String(play.play_id));
  renderGame();
  emit("play", play);
  if (!play.finished) {
    say("resumed");
    view.nextCover()?.focus();
  }
}

/**
 * After login or a reload: show the play this tab had on its board, or else the newest
 * unfinished play, as far as it was uncovered.
 */
export async function restore() {
  let play = null;
  const stored = sessionStorage.getItem(PLAY_KEY);
  if (stored) {
    try {
      play = await api.play(stored);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
      sessionStorage.removeItem(PLAY_KEY);
    }
  }
  if (!play || play.finished) {
    const newest = (await api.plays(10)).plays.find((p) => !p.finished);
    if (newest) play = newest;
  }
  play = await withShown(play);
  state.play = play;
  renderGame();
  if (play && !play.finished) say("resumed");
  emit("play", play);
}
