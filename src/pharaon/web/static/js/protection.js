// The player's own protection in « Compte »: a pause (cool-off) of 24 hours to 7 days, a new
// password, closing the account. The pause and the closure cannot be undone: each asks twice.

import { api, ApiError } from "./api.js";
import { formatWhen, t } from "./i18n.js";
import { busy, clearMessage, el, emit, on, say, sayError, state } from "./ui.js";

// The server's rule for a password (service/passwords.py), in characters (code points).
const PASSWORD_LENGTH = { low: 8, high: 256 };
// A 403 from a password check means the password given is wrong; a 409, that the password or
// the account changed between the check and the change (another tab, an operator).
const PASSWORD_CODES = { forbidden: "err_password_wrong", conflict: "err_password_race" };
const CONFIRM_BOXES = ["cooloff-confirm-box", "closure-confirm-box"];

const $ = (id) => document.getElementById(id);

export function initProtection() {
  $("cooloff-form").addEventListener("submit", (event) => {
    event.preventDefault();
    askCoolOff();
  });
  $("password-form").addEventListener("submit", (event) => {
    event.preventDefault();
    changePassword();
  });
  $("closure-form").addEventListener("submit", (event) => {
    event.preventDefault();
    askClosure();
  });
  on("me", () => {
    $("password-username").value = state.me?.email ?? "";
  });
  on("logged-out", forget);
}

/** Show `children` (a confirm button first) in the box `boxId`; « Annuler » empties it. */
function ask(boxId, backTo, ...children) {
  const cancel = el("button", {
    type: "button",
    text: t("exclude_cancel"),
    onclick: () => {
      $(boxId).replaceChildren();
      $(backTo).focus();
    },
  });
  $(boxId).replaceChildren(...children, cancel);
  children.find((node) => node.tagName === "BUTTON").focus();
}

function askCoolOff() {
  const select = $("cooloff-hours");
  const hours = Number(select.value);
  const confirm = el("button", {
    type: "button",
    class: "danger",
    id: "cooloff-confirm",
    text: t("cooloff_confirm", { length: select.selectedOptions[0].textContent }),
    onclick: () => coolOff(hours, confirm),
  });
  ask("cooloff-confirm-box", "cooloff-submit", confirm);
}

async function coolOff(hours, button) {
  await busy([button], async () => {
    clearMessage();
    let until;
    try {
      ({ until } = await api.coolOff(hours));
    } catch (error) {
      sayError(error);
      return;
    }
    $("cooloff-confirm-box").replaceChildren();
    try {
      state.me = await api.me();
    } catch {
      // The pause is in force all the same: show it from the answer.
      // (a later pause already in force keeps its name: the next GET /me says it)
      state.me = { ...state.me, self_excluded_until: until, pause_kind: "cool_off" };
    }
    // `until` may be later than asked: a pause never shortens an exclusion already in force.
    say("cooloff_until", { when: formatWhen(until) }, { kind: "info" });
    emit("me");
  });
}

async function changePassword() {
  const current = $("password-current").value;
  const next = $("password-new").value;
  const length = [...next].length; // the server counts characters, not UTF-16 units
  if (length < PASSWORD_LENGTH.low || length > PASSWORD_LENGTH.high) {
    say("err_password_length", PASSWORD_LENGTH, { kind: "error" });
    $("password-new").focus();
    return;
  }
  if (next !== $("password-again").value) {
    say("err_password_mismatch", {}, { kind: "error" });
    $("password-again").focus();
    return;
  }
  await busy([$("password-submit")], async () => {
    clearMessage();
    try {
      await api.changePassword(current, next);
    } catch (error) {
      sayError(error, { codes: PASSWORD_CODES });
      if (error instanceof ApiError && error.code === "forbidden") $("password-current").focus();
      return;
    }
    for (const id of ["password-current", "password-new", "password-again"]) $(id).value = "";
    say("password_changed", {}, { kind: "success" });
  });
}

function askClosure() {
  const password = $("closure-password").value;
  const warning = el("p", {
    id: "closure-warning",
    class: "warning",
    text: t("closure_warning"),
  });
  const confirm = el("button", {
    type: "button",
    class: "danger",
    id: "closure-confirm",
    text: t("closure_confirm"),
    onclick: () => closeAccount(password, confirm),
  });
  ask("closure-confirm-box", "closure-submit", warning, confirm);
}

async function closeAccount(password, button) {
  await busy([button], async () => {
    clearMessage();
    try {
      await api.closeAccount(password);
    } catch (error) {
      $("closure-confirm-box").replaceChildren();
      sayError(error, { codes: PASSWORD_CODES });
      if (error instanceof ApiError && error.code === "forbidden") $("closure-password").focus();
      return;
    }
    // The server ended the session: the page logs out as « Se déconnecter » does.
    emit("logged-out");
    say("account_closed_done", {}, { kind: "info" });
  });
}

/** Logged out: no password nor pending confirmation stays in the page. */
function forget() {
  for (const id of ["password-username", "password-current", "password-new", "password-again"]) {
    $(id).value = "";
  }
  $("closure-password").value = "";
  for (const id of CONFIRM_BOXES) $(id).replaceChildren();
}
