// What every part of the page shares: the state, the message line, a DOM helper, errors.

import { ApiError, NetworkError } from "./api.js";
import { formatStake } from "./money.js";
import { formatWhen, t } from "./i18n.js";

export const state = {
  rules: null, // GET /rules
  me: null, // GET /me, null when logged out
  play: null, // the play on the game board
  depositsDuringPlay: 0, // deposited while `play` is unfinished (its lot is still hidden)
  view: "game",
};

/** Listeners by event name: "me" (account changed), "play" (a play changed), "lang". */
const listeners = new Map();

export function on(name, listener) {
  if (!listeners.has(name)) listeners.set(name, []);
  listeners.get(name).push(listener);
}

export function emit(name, value) {
  for (const listener of listeners.get(name) ?? []) listener(value);
}

/** document.createElement with properties, listeners and children in one call. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else node.setAttribute(key, value === true ? "" : String(value));
  }
  node.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

// The message line: one at a time, kept as key + params so a language switch re-says it.
let message = null;

export function say(key, params = {}, { kind = "info", retry = null } = {}) {
  message = { key, params, kind, retry };
  renderMessage();
}

export function clearMessage() {
  message = null;
  renderMessage();
}

export function renderMessage() {
  const box = document.getElementById("message");
  const text = document.getElementById("message-text");
  const retry = document.getElementById("retry");
  if (!message) {
    box.hidden = true;
    text.textContent = "";
    retry.hidden = true;
    return;
  }
  box.hidden = false;
  box.className = `message ${message.kind}`;
  text.textContent = t(message.key, message.params);
  retry.hidden = !message.retry;
}

/** Leaving a view: what was said there (not an error) goes with it. */
export function leaveView() {
  if (message && message.kind !== "error") clearMessage();
}

export function retryLast() {
  const action = message?.retry;
  if (action) {
    clearMessage();
    action();
  }
}

/**
 * Say what went wrong, plainly. `context.stakeCents` names the stake for sold_out;
 * `context.retry` (network failures only) is offered as « Réessayer »; `context.charges` marks
 * a request that moves money. `context.codes` maps an error code to the key that says it for this
 * request (a `forbidden` from a password check means a wrong password, nothing else).
 */
export function sayError(error, context = {}) {
  if (error instanceof NetworkError) {
    // A retried purchase or deposit reuses its Idempotency-Key: say it cannot charge twice.
    const key = context.charges ? "err_network_retry" : "err_network";
    say(key, {}, { kind: "error", retry: context.retry ?? null });
    return;
  }
  if (!(error instanceof ApiError)) {
    console.error(error);
    say("err_other", { status: "?" }, { kind: "error" });
    return;
  }
  if (error.code === "moderators_required") emit("moderators-required");
  const params = { detail: error.detail, status: error.status };
  if (context.stakeCents) params.stake = formatStake(context.stakeCents);
  const when = error.fields?.until ?? error.fields?.closed_at;
  if (when) params.when = formatWhen(when);
  params.reason = error.fields?.reason ?? "";
  if (context.codes?.[error.code]) {
    say(context.codes[error.code], params, { kind: "error" });
  } else if (error.code === "unauthorized" && context.login) {
    say("err_login", params, { kind: "error" });
  } else if (error.code === "unauthorized") {
    say("err_unauthorized", params, { kind: "error" });
    emit("logged-out");
  } else if (error.fields?.pause && t(`err_${error.code}_${error.fields.pause}`) !== `err_${error.code}_${error.fields.pause}`) {
    // A pause called by its name: a cool-off, or a self-exclusion.
    say(`err_${error.code}_${error.fields.pause}`, params, { kind: "error" });
  } else if (params.when && t(`err_${error.code}_when`) !== `err_${error.code}_when`) {
    say(params.reason ? `err_${error.code}_reason` : `err_${error.code}_when`, params, {
      kind: "error",
    });
  } else if (t(`err_${error.code}`) !== `err_${error.code}`) {
    say(`err_${error.code}`, params, { kind: "error" });
  } else {
    say("err_other", params, { kind: "error" });
  }
}

/** Run `action` with `buttons` disabled, so one press sends one request. */
export async function busy(buttons, action) {
  const list = buttons.filter(Boolean);
  if (list.some((b) => b.dataset.busy === "1")) return undefined;
  for (const b of list) {
    b.dataset.busy = "1";
    b.setAttribute("aria-disabled", "true");
  }
  try {
    return await action();
  } finally {
    for (const b of list) {
      delete b.dataset.busy;
      b.removeAttribute("aria-disabled");
    }
  }
}

/** What the balance line shows: while a play is unfinished, the balance before it. */
export function shownBalanceCents() {
  const { me, play } = state;
  if (!me) return null;
  // During a play: its stake is paid, its lot not shown yet (an Auto lot is in the server's
  // balance already; a Jouer lot waits for the fourth grid).
  if (play && !play.finished) {
    return play.balance_before_cents - play.stake_cents + state.depositsDuringPlay;
  }
  return me.balance_cents;
}

export function prefersReducedMotion() {
  return window.matchMedia("(prefers-reduced-motion: reduce)").matches;
}
