// Identity and withdrawals on the account page (docs/rules.md §7): where the identity stands
// (provisional with the days left, or verified) and what to do; once verified, a withdrawal
// form and the list of the player's withdrawals with their state. Read at log-in and each time
// « Compte » is opened, so an operator's decision shows without a reload.

import { api, newIdempotencyKey } from "./api.js";
import { formatCents, parseEuros } from "./money.js";
import { formatWhen, t } from "./i18n.js";
import { busy, clearMessage, el, emit, on, say, sayError, state } from "./ui.js";

const $ = (id) => document.getElementById(id);

let withdrawals = [];
let asked = null; // the e-mail of the account whose withdrawals were last asked for

export function initWithdrawals() {
  $("withdrawal-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const cents = parseEuros($("withdrawal-amount").value);
    if (cents === null || cents < 1) {
      say("err_amount", {}, { kind: "error" });
      $("withdrawal-amount").focus();
      return;
    }
    withdraw(cents, newIdempotencyKey());
  });
  on("me", () => {
    if (state.me?.email !== asked) load();
    else render();
  });
  on("lang", render);
  on("logged-out", () => {
    withdrawals = [];
    asked = null;
    $("withdrawal-amount").value = "";
    render();
  });
}

/** Ask the server for the account's withdrawals again. */
export async function load() {
  asked = state.me?.email ?? null;
  if (!asked) return;
  try {
    withdrawals = await api.withdrawals();
  } catch {
    return; // the account page still works; the next refresh asks again
  }
  render();
}

async function withdraw(cents, key) {
  await busy([$("withdrawal-submit")], async () => {
    clearMessage();
    let answer;
    try {
      answer = await api.withdraw(cents, key);
    } catch (error) {
      sayError(error, {
        charges: true,
        retry: () => withdraw(cents, key),
        codes: { insufficient_funds: "err_withdrawal_funds" },
      });
      return;
    }
    $("withdrawal-amount").value = "";
    withdrawals = [answer, ...withdrawals.filter((w) => w.withdrawal_id !== answer.withdrawal_id)];
    say(`withdrawal_done_${answer.state}`, { amount: formatCents(answer.amount_cents) }, {
      kind: "success",
    });
    try {
      state.me = await api.me(); // the balance after it
    } catch {
      state.me = { ...state.me, balance_cents: state.me.balance_cents - answer.amount_cents };
    }
    emit("me");
  });
}

function identityText(identity) {
  if (!identity) return "";
  if (identity.state === "verified") {
    return t("identity_verified", { when: formatWhen(identity.verified_at) });
  }
  if (identity.days_left === 0) return t("identity_overdue");
  return t("identity_provisional", { when: formatWhen(identity.deadline), days: identity.days_left });
}

function render() {
  const identity = state.me?.identity ?? null;
  $("identity-state").textContent = identityText(identity);
  $("identity-state").dataset.state = identity?.state ?? "";
  $("withdrawal-form").hidden = identity?.state !== "verified";
  $("withdrawals-title").hidden = withdrawals.length === 0;
  $("withdrawals-list").replaceChildren(
    ...withdrawals.map((w) =>
      el(
        "li",
        { dataset: { state: w.state, withdrawalId: w.withdrawal_id } },
        el("strong", { text: t(`withdrawal_${w.state}`) }),
        el("span", {
          class: "when",
          text: ` — ${t("withdrawal_line", { amount: formatCents(w.amount_cents), iban: w.iban })}, ${formatWhen(w.requested_at)}`,
        }),
        w.reason ? el("p", { class: "reason", text: t("withdrawal_reason", { reason: w.reason }) }) : null,
      ),
    ),
  );
}
