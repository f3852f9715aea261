// The game: stake, « Jouer » / « Auto », uncovering the grids, resuming an unfinished play.

import { api, ApiError, newIdempotencyKey } from "./api.js";
import { PlayView } from "./board.js";
import { keep } from "./receipt.js";
import { formatStake } from "./money.js";
import { t } from "./i18n.js";
import { busy, clearMessage, el, emit, on, say, sayError, state } from "./ui.js";

const STAKE_KEY = "pharaon.stake";
const PLAY_KEY = "pharaon.play"; // the play on the board, so a reload brings it back

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
  let next;
  try {
    next = await api.reveal(play.play_id, grid);
  } catch (error) {
    sayError(error, { retry: () => reveal(grid, {}) });
    return;
  }
  if (state.play?.play_id !== play.play_id) return; // the board moved on meanwhile
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
export function resumePlay(play) {
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
  state.play = play;
  renderGame();
  if (play && !play.finished) say("resumed");
  emit("play", play);
}
