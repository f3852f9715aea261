// The console's start: language, log-in with TOTP, the sections, logging out.

import * as audit from "./audit.js";
import * as blocks from "./blocks.js";
import * as players from "./players.js";
import * as sales from "./sales.js";
import * as withdrawals from "./withdrawals.js";
import { api, hasSessionCookie } from "./api.js";
import { applyStatic, lang, setLang, t } from "./i18n.js";
import { $, busy, clearMessage, renderMessage, say, state } from "./shared.js";

const SCREENS = { blocks, sales, players, withdrawals, audit };

function renderLang() {
  applyStatic();
  const button = $("lang");
  button.textContent = t("switch_to");
  button.setAttribute("lang", t("switch_lang"));
}

function renderBar() {
  const me = state.me;
  $("operator-bar").hidden = me === null;
  $("logout").hidden = me === null;
  $("tabs").hidden = me === null;
  $("who").textContent = me?.email ?? "";
  $("role").textContent = me ? t(`role_${me.role}`) : "";
  document.body.dataset.role = me?.role ?? "";
}

function show(view) {
  state.view = view;
  $("view-login").hidden = state.me !== null;
  for (const name of Object.keys(SCREENS)) {
    $(`view-${name}`).hidden = state.me === null || name !== view;
  }
  for (const button of $("tabs").querySelectorAll("button")) {
    if (button.dataset.view === view) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
  if (state.me !== null) SCREENS[view].refresh?.();
}

function loggedOut() {
  state.me = null;
  renderBar();
  show(state.view);
  $("login-email").focus();
}

async function loggedIn(me) {
  state.me = me;
  renderBar();
  show(state.view);
}

function setUpLogIn() {
  $("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const me = await busy($("login-submit"), async () => {
      const email = $("login-email").value.trim();
      await api.logIn(email, $("login-password").value, $("login-totp").value.trim());
      return api.me();
    });
    $("login-password").value = "";
    $("login-totp").value = "";
    if (!me) return;
    clearMessage();
    await loggedIn(me);
  });
  $("logout").addEventListener("click", async () => {
    await busy($("logout"), () => api.logOut());
    say(() => t("logged_out"));
    loggedOut();
  });
  document.addEventListener("console:logged-out", () => {
    if (state.me !== null) loggedOut();
  });
}

function start() {
  renderLang();
  for (const screen of Object.values(SCREENS)) screen.setUp();
  setUpLogIn();
  $("tabs").addEventListener("click", (event) => {
    const view = event.target.closest("button")?.dataset.view;
    if (view) {
      clearMessage();
      show(view);
    }
  });
  $("lang").addEventListener("click", () => {
    setLang(lang() === "fr" ? "en" : "fr");
    renderLang();
    renderBar();
    renderMessage();
    for (const screen of Object.values(SCREENS)) screen.render();
  });
  if (!hasSessionCookie()) {
    loggedOut();
    return;
  }
  api.me().then(loggedIn, () => loggedOut());
}

start();
