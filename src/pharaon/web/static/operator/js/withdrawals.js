// The withdrawals screen: the withdrawals above the threshold waiting for an admin, oldest
// first; an admin approves one (paid to the verified IBAN, once confirmed: the amount, the IBAN
// and the player said again) or rejects it with a reason the player reads (the amount goes back
// to the player's balance). An analyst only reads.

import { formatCents } from "../../js/money.js";
import { api } from "./api.js";
import { formatWhen, t } from "./i18n.js";
import { $, busy, el, isAdmin, say, table } from "./shared.js";

let waiting = null;
let rejecting = null; // the withdrawal whose rejection is being written
let approving = null; // the withdrawal whose payment waits for its confirmation

function row(w) {
  const actions = isAdmin()
    ? [
        el("button", {
          type: "button",
          class: "small primary",
          text: t("approve"),
          "aria-label": t("approve_label", { id: w.withdrawal_id }),
          onclick: () => askApprove(w),
        }),
        el("button", {
          type: "button",
          class: "small danger",
          text: t("reject"),
          "aria-label": t("reject_label", { id: w.withdrawal_id }),
          onclick: () => askReject(w),
        }),
      ]
    : [];
  return el(
    "tr",
    { dataset: { withdrawalId: w.withdrawal_id } },
    el("td", { text: String(w.withdrawal_id) }),
    el("td", { text: formatWhen(w.requested_at) }),
    el("td", { text: w.email }),
    el("td", { class: "num", text: formatCents(w.amount_cents) }),
    el("td", { text: w.iban }),
    el("td", { class: "actions" }, ...actions),
  );
}

function askApprove(w) {
  approving = w;
  rejecting = null;
  render();
  $("approve-submit").focus();
}

function renderApproveForm() {
  const w = approving;
  $("approve-form").hidden = w === null;
  if (w === null) return;
  const amount = formatCents(w.amount_cents);
  $("approve-title").textContent = t("approve_title", { id: w.withdrawal_id, amount });
  $("approve-note").textContent = t("approve_note", { amount, iban: w.iban, email: w.email });
  $("approve-submit").textContent = t("approve_confirm", { amount });
}

async function approve() {
  const w = approving;
  if (!w) return;
  const done = await busy($("approve-submit"), () => api.approve(w.withdrawal_id));
  approving = null;
  if (done !== undefined) {
    say(() => t("approved", { id: w.withdrawal_id, amount: formatCents(w.amount_cents) }), "success");
  }
  await refresh();
}

function askReject(w) {
  rejecting = w;
  approving = null;
  render();
  $("reject-reason").value = "";
  $("reject-reason").focus();
}

function renderRejectForm() {
  $("reject-form").hidden = rejecting === null;
  $("reject-title").textContent = rejecting
    ? t("reject_title", { id: rejecting.withdrawal_id, amount: formatCents(rejecting.amount_cents) })
    : "";
}

export function render() {
  if (waiting !== null) table("withdrawals-rows", "withdrawals-empty", waiting.map(row));
  renderApproveForm();
  renderRejectForm();
}

export async function refresh() {
  const got = await busy(null, () => api.withdrawals("requested"));
  if (got === undefined) return;
  waiting = got;
  render();
}

export function setUp() {
  $("reject-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const w = rejecting;
    const reason = $("reject-reason").value.trim();
    if (!w || !reason) return;
    const done = await busy($("reject-submit"), () => api.reject(w.withdrawal_id, reason));
    if (done === undefined) return;
    rejecting = null;
    say(() => t("rejected", { id: w.withdrawal_id, amount: formatCents(w.amount_cents) }), "success");
    await refresh();
  });
  $("approve-form").addEventListener("submit", (event) => {
    event.preventDefault();
    approve();
  });
  $("approve-cancel").addEventListener("click", () => {
    approving = null;
    renderApproveForm();
  });
  $("reject-cancel").addEventListener("click", () => {
    rejecting = null;
    renderRejectForm();
  });
}
