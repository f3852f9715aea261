// The operator's messages on the account page: each measure an operator took on the account
// (a suspension, an exclusion, its lifting) or a note, with the reason given, newest first.
// Read at log-in and each time « Mon compte » is opened, so a new one shows without a reload;
// the card stays hidden while there is none.

import { api } from "./api.js";
import { formatWhen, t } from "./i18n.js";
import { el, on, state } from "./ui.js";

const $ = (id) => document.getElementById(id);

let notes = [];
let asked = null; // the e-mail of the account whose notes were last asked for

export function initNotes() {
  on("me", () => {
    if (state.me?.email !== asked) load();
    else render();
  });
  on("lang", render);
  on("logged-out", () => {
    notes = [];
    asked = null;
    render();
  });
}

/** Ask the server for the account's notes again. */
export async function load() {
  asked = state.me?.email ?? null;
  if (!asked) return;
  try {
    notes = await api.notes();
  } catch {
    return; // the account page still works; the next refresh asks again
  }
  render();
}

function render() {
  $("notes").hidden = notes.length === 0;
  $("notes-list").replaceChildren(
    ...notes.map((n) =>
      el(
        "li",
        { dataset: { measure: n.measure } },
        el("strong", { text: t(`measure_${n.measure}`) }),
        el("span", {
          class: "when",
          text: ` — ${formatWhen(n.created_at)}${n.until ? `, ${t("note_until", { when: formatWhen(n.until) })}` : ""}`,
        }),
        el("p", { class: "reason", text: n.reason }),
      ),
    ),
  );
}
