// The page's start: language, sections, logging in and out, the balance line.

import { api, ApiError, hasSessionCookie } from "./api.js";
import { initAccount, renderAccount } from "./account.js";
import { initGame, renderGame, renderStakes, restore } from "./game.js";
import { initHistory, load as loadHistory } from "./history.js";
import { applyStatic, formatWhen, lang, setLang, t } from "./i18n.js";
import { initInfo, loadInfo } from "./info.js";
import { initLanding, renderLanding } from "./landing.js";
import { initNotes, load as loadNotes } from "./notes.js";
import { formatCents } from "./money.js";
import { initProtection } from "./protection.js";
import { initWithdrawals, load as loadWithdrawals } from "./withdrawals.js";
import { initReality } from "./reality.js";
import { initSound } from "./sound.js";
import { installSymbols } from "./symbols.js";
import {
  busy,
  clearMessage,
  emit,
  leaveView,
  on,
  renderMessage,
  retryLast,
  sayError,
  shownBalanceCents,
  state,
} from "./ui.js";

const VIEWS = ["game", "account", "history", "info"];
const PRIVATE_VIEWS = new Set(["account", "history"]);

const $ = (id) => document.getElementById(id);

/** Show one section; « Jeu » shows the sign-up and log-in forms while logged out. */
function showView(name) {
  if (!state.me && PRIVATE_VIEWS.has(name)) name = "game";
  state.view = name;
  for (const view of VIEWS) {
    const section = $(`view-${view}`);
    if (section) section.hidden = view !== name || (view === "game" && !state.me);
  }
  $("view-auth").hidden = !(name === "game" && !state.me);
  for (const button of document.querySelectorAll("#tabs button")) {
    const current = button.dataset.view === name;
    if (current) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
    button.hidden = !state.me && PRIVATE_VIEWS.has(button.dataset.view);
  }
  if (name === "history") loadHistory();
  if (name === "account") {
    loadNotes();
    loadWithdrawals();
  }
  if (name === "info") loadInfo();
}

function renderAccountBar() {
  const me = state.me;
  $("account-bar").hidden = !me;
  $("logout").hidden = !me;
  if (!me) return;
  $("who").textContent = me.email;
  $("balance").textContent = formatCents(shownBalanceCents());
  const hidden = state.play && !state.play.finished;
  $("balance-note").textContent = hidden ? `(${t("balance_hidden")})` : "";
  const until = me.self_excluded_until ? new Date(me.self_excluded_until) : null;
  const excluded = until && until.getTime() > Date.now();
  $("excluded").hidden = !excluded;
  // A pause called by its name: a cool-off the player chose, or a self-exclusion.
  const pause = me.pause_kind === "cool_off" ? "cooloff_until" : "excluded_until";
  $("excluded").textContent = excluded ? t(pause, { when: formatWhen(me.self_excluded_until) }) : "";
  $("suspended").hidden = !me.suspended;
  // Suspended by the server for an identity not verified in time (docs/rules.md §7).
  const unverified = me.identity?.state === "provisional" && me.identity.days_left === 0;
  $("suspended").textContent = !me.suspended
    ? ""
    : me.suspended_until
      ? t("suspended_until", { when: formatWhen(me.suspended_until) })
      : unverified
        ? t("suspended_identity")
        : t("suspended");
}

function renderLanguage() {
  applyStatic();
  const button = $("lang");
  button.textContent = t("switch_to");
  button.setAttribute("lang", t("switch_lang"));
  renderMessage();
  renderAccountBar();
}

async function enter() {
  // Logged in: the account, then the play left on the board.
  state.me = await api.me();
  emit("me");
  // A new account sets its moderators first (account.js): its form, before the game.
  const first = state.me.limits.moderators_set === false ? "account" : "game";
  showView(state.view === "info" ? "info" : first);
  await restore();
}

async function logIn(email, password) {
  await api.logIn(email, password);
  await enter();
}

function initAuth() {
  $("signup-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const email = $("signup-email").value.trim();
    const password = $("signup-password").value;
    const birth = $("signup-birth").value;
    busy([$("signup-submit")], async () => {
      clearMessage();
      try {
        await api.signUp(email, password, birth);
        await logIn(email, password);
      } catch (error) {
        sayError(error);
      }
    });
  });
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    busy([$("login-submit")], async () => {
      clearMessage();
      try {
        await logIn($("login-email").value.trim(), $("login-password").value);
      } catch (error) {
        sayError(error, { login: true });
      }
    });
  });
  $("logout").addEventListener("click", () => {
    busy([$("logout")], async () => {
      try {
        await api.logOut();
      } catch (error) {
        sayError(error);
        return;
      }
      clearMessage();
      emit("logged-out");
    });
  });
  on("logged-out", () => {
    state.me = null;
    renderAccountBar();
    showView(state.view === "info" ? "info" : "game");
    $("login-email").focus();
  });
}

async function boot() {
  try {
    state.rules = await api.rules();
  } catch (error) {
    sayError(error, { retry: boot });
    return;
  }
  renderStakes();
  renderGame();
  renderLanding();
  try {
    if (!hasSessionCookie()) throw new ApiError(401, "unauthorized", "no session");
    await enter();
  } catch (error) {
    if (error.code === "unauthorized") {
      state.me = null;
      renderAccountBar();
      showView(state.view);
    } else {
      sayError(error, { retry: boot });
    }
  }
}

function start() {
  installSymbols();
  renderLanguage();
  $("lang").addEventListener("click", () => {
    setLang(lang() === "fr" ? "en" : "fr");
    renderLanguage();
    emit("lang");
  });
  $("retry").addEventListener("click", retryLast);
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => {
      // Another tab: what was said on this one (« Partie reprise… ») goes with it.
      if (button.dataset.view !== state.view) leaveView();
      showView(button.dataset.view);
    });
  }
  on("me", renderAccountBar);
  on("play", renderAccountBar);
  on("lang", renderAccountBar);
  initAuth();
  initGame();
  initAccount(showView);
  initProtection();
  initWithdrawals();
  initNotes();
  initHistory(showView);
  initInfo();
  initLanding();
  initReality();
  initSound($("sound"));
  renderAccount();
  showView("game");
  boot();
}

start();
