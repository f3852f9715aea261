// The reality check: every N minutes of a session (N chosen in « Compte », kept by the server),
// a dialog with the time played since the log-in and the session's net result, both from
// GET /me/session; « Continuer » closes it, « Se déconnecter » ends the session.

import { api } from "./api.js";
import { formatWhen, t } from "./i18n.js";
import { formatCents } from "./money.js";
import { emit, on, sayError, state } from "./ui.js";

const $ = (id) => document.getElementById(id);

let timer = null;
let scheduledFor = null; // the interval (minutes) the timer was set for
let shown = null; // the figures in the open dialog, re-said on a language switch

export function initReality() {
  $("reality-continue").addEventListener("click", () => {
    $("reality-dialog").close();
  });
  $("reality-dialog").addEventListener("close", () => {
    shown = null;
    schedule();
  });
  $("reality-logout").addEventListener("click", async () => {
    try {
      await api.logOut();
    } catch (error) {
      sayError(error);
      return;
    }
    emit("logged-out");
  });
  on("me", () => {
    if ((state.me?.reality_check_minutes ?? null) !== scheduledFor) schedule();
  });
  on("logged-out", () => {
    stop();
    if ($("reality-dialog").open) $("reality-dialog").close();
  });
  on("lang", render);
}

function stop() {
  clearTimeout(timer);
  timer = null;
  scheduledFor = null;
  delete $("reality-dialog").dataset.dueInSeconds;
}

/** Set the timer for the next multiple of N minutes since the session's log-in. */
async function schedule() {
  stop();
  const minutes = state.me?.reality_check_minutes ?? null;
  if (minutes === null || $("reality-dialog").open) return;
  scheduledFor = minutes;
  let figures;
  try {
    figures = await api.sessionFigures();
  } catch {
    return; // logged out meanwhile, or the server away: the next "me" sets it again
  }
  if (scheduledFor !== minutes) return; // changed while asking
  const period = minutes * 60;
  let wait = period - (figures.elapsed_seconds % period);
  if (wait < 60) wait += period; // just shown (clocks a little apart): not again at once
  timer = setTimeout(showCheck, wait * 1000);
  $("reality-dialog").dataset.dueInSeconds = String(wait); // when it is set (the tests wait for it)
}

async function showCheck() {
  timer = null;
  delete $("reality-dialog").dataset.dueInSeconds;
  try {
    shown = await api.sessionFigures();
  } catch (error) {
    if (error.code !== "unauthorized") sayError(error);
    return;
  }
  render();
  $("reality-dialog").showModal();
  $("reality-continue").focus();
}

function render() {
  if (!shown) return;
  $("reality-time").textContent = t("reality_time", {
    minutes: Math.floor(shown.elapsed_seconds / 60),
    when: formatWhen(shown.started_at),
  });
  $("reality-net").textContent = t("reality_net", {
    amount: formatCents(shown.net_cents),
    wins: formatCents(shown.wins_cents),
    stakes: formatCents(shown.stakes_cents),
  });
}
