// What the console's screens share: who is logged in, the message line, errors, a busy button.

import { ApiError } from "../../js/api.js";
import { blockRefusal, t } from "./i18n.js";

export { el } from "../../js/ui.js";

export const state = {
  me: null, // GET /operator/me, null when logged out
  view: "blocks",
};

export const $ = (id) => document.getElementById(id);

export function isAdmin() {
  return state.me?.role === "admin";
}

export function isAuditor() {
  return state.me?.role === "auditor";
}

// One message at a time, kept as a function so a language switch says it again.
let message = null;

export function say(text, kind = "info") {
  message = { text: typeof text === "function" ? text : () => text, kind };
  renderMessage();
}

export function clearMessage() {
  message = null;
  renderMessage();
}

export function renderMessage() {
  const box = $("message");
  box.hidden = message === null;
  box.className = `message ${message?.kind ?? ""}`;
  $("message-text").textContent = message ? message.text() : "";
}

/** Say what went wrong; a 401 sends the operator back to the log-in form. */
export function sayError(error) {
  if (!(error instanceof ApiError)) {
    say(() => t("err_network"), "error");
    return;
  }
  if (error.code === "csrf") say(() => t("err_csrf"), "error");
  else if (error.status === 401) {
    say(() => t("err_unauthorized"), "error");
    document.dispatchEvent(new CustomEvent("console:logged-out"));
  } else {
    say(() => errorText(error), "error");
    if (error.code === "validation_error") {
      const inputs = namedInputs(error.detail);
      for (const input of inputs) input.setAttribute("aria-invalid", "true");
      inputs[0]?.focus();
    }
  }
}

// The server's error codes (docs/api.md) said in the console's words; its detail is English,
// kept for the logs and scripts, and shown only where no sentence says it better.
const SAID = new Set([
  "conflict",
  "not_found",
  "validation_error",
  "unavailable",
  "locked_out",
  "internal_error",
  "too_large",
  "verification_failed",
]);

/** The inputs a 422 names (its detail: "field: why; field: why"), among the forms shown: an
 * input is named as its request's field (name="iban"). */
function namedInputs(detail) {
  const names = [...(detail ?? "").matchAll(/(?:^|; )([a-z_]+(?:\.[a-z_0-9]+)*):/g)].map(
    (m) => m[1].split(".").pop(),
  );
  return names
    .map((name) => document.querySelector(`form:not([hidden]) [name="${name}"]`))
    .filter((input) => input !== null && input.checkVisibility());
}

function errorText(error) {
  if (error.code === "validation_error") {
    const inputs = namedInputs(error.detail);
    if (inputs.length) {
      const labels = inputs.map((input) => document.querySelector(`label[for="${input.id}"]`));
      const fields = labels.map((label) => `« ${label?.textContent ?? ""} »`).join(", ");
      return t("err_code_validation_fields", { fields });
    }
  }
  if (error.code === "block_refused") {
    return t("err_code_block_refused", { detail: blockRefusal(error.detail) });
  }
  if (error.code === "banned") return t("err_code_banned");
  if (error.status === 403) return t("err_code_forbidden");
  if (SAID.has(error.code)) return t(`err_code_${error.code}`);
  return t("err_other", { status: error.status, detail: error.detail });
}

/** Run `action` with `button` (if any) disabled; errors are said, never thrown. */
export async function busy(button, action) {
  if (button) button.disabled = true;
  try {
    return await action();
  } catch (error) {
    sayError(error);
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

export function table(rowsId, emptyId, rows) {
  $(rowsId).replaceChildren(...rows);
  $(emptyId).hidden = rows.length > 0;
}
