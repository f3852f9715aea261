// The account: deposits of play money, the moderators (weekly deposit and stake ceilings, set
// before the first deposit and stake) and the other deposit, stake and loss limits, the reality
// check's interval, self-exclusion.

import { api, newIdempotencyKey } from "./api.js";
import { centsToField, formatCents, parseEuros } from "./money.js";
import { formatWhen, t } from "./i18n.js";
import { busy, clearMessage, el, emit, on, say, sayError, state } from "./ui.js";

// Each limit's field (limit-<period>) and its key in the API's Limits.
const LIMIT_KEYS = {
  daily: "daily_cents",
  weekly: "weekly_cents",
  monthly: "monthly_cents",
  stake_daily: "stake_daily_cents",
  stake_weekly: "stake_weekly_cents",
  stake_monthly: "stake_monthly_cents",
  loss: "loss_weekly_cents",
};
// The moderators: required, never removed.
const MODERATORS = ["weekly", "stake_weekly"];
const MAX_DAYS = 3650;

const $ = (id) => document.getElementById(id);

export function initAccount(showView) {
  $("deposit-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const cents = parseEuros($("deposit-amount").value);
    if (cents === null || cents < 1) {
      say("err_amount", {}, { kind: "error" });
      $("deposit-amount").focus();
      return;
    }
    deposit(cents, newIdempotencyKey());
  });
  $("limits-form").addEventListener("submit", (event) => {
    event.preventDefault();
    saveLimits();
  });
  $("reality-form").addEventListener("submit", (event) => {
    event.preventDefault();
    saveRealityCheck();
  });
  $("exclusion-form").addEventListener("submit", (event) => {
    event.preventDefault();
    askExclusion();
  });
  on("me", renderAccount);
  on("lang", renderAccount);
  // A deposit or a stake refused for want of moderators (ui.js sayError): to their form.
  on("moderators-required", () => {
    showView("account");
    $("moderators-needed").hidden = false;
    $(firstMissingModerator()).focus();
  });
}

function firstMissingModerator() {
  const missing = MODERATORS.find((period) => $(`limit-${period}`).value.trim() === "");
  return `limit-${missing ?? MODERATORS[0]}`;
}

async function deposit(cents, key) {
  await busy([$("deposit-submit")], async () => {
    clearMessage();
    let answer;
    try {
      answer = await api.deposit(cents, key);
    } catch (error) {
      sayError(error, { charges: true, retry: () => deposit(cents, key) });
      return;
    }
    if (state.play && !state.play.finished) state.depositsDuringPlay += answer.amount_cents;
    state.me = { ...state.me, balance_cents: answer.balance_cents };
    $("deposit-amount").value = "";
    say("deposited", { amount: formatCents(answer.amount_cents) }, { kind: "success" });
    emit("me");
  });
}

// Sends only the limits the player changed (each field against the limit in force it shows):
// a limit left out stays as it is, and so does a raise it waits for.
async function saveLimits() {
  const body = {};
  for (const [period, key] of Object.entries(LIMIT_KEYS)) {
    const text = $(`limit-${period}`).value.trim();
    const cents = text === "" ? null : parseEuros(text);
    if (text !== "" && cents === null) {
      say("err_amount", {}, { kind: "error" });
      $(`limit-${period}`).focus();
      return;
    }
    if (cents === null && MODERATORS.includes(period)) {
      say("moderators_needed", {}, { kind: "error" });
      $(`limit-${period}`).focus();
      return;
    }
    if (cents !== (state.me?.limits?.[key] ?? null)) body[key] = cents;
  }
  await busy([$("limits-submit")], async () => {
    clearMessage();
    try {
      const limits = await api.setLimits(body);
      state.me = { ...state.me, limits };
    } catch (error) {
      sayError(error);
      return;
    }
    say("limits_saved", {}, { kind: "success" });
    emit("me");
  });
}

async function saveRealityCheck() {
  const value = $("reality-minutes").value;
  const minutes = value === "" ? null : Number(value);
  await busy([$("reality-submit")], async () => {
    clearMessage();
    try {
      const answer = await api.setRealityCheck(minutes);
      state.me = { ...state.me, reality_check_minutes: answer.minutes };
    } catch (error) {
      sayError(error);
      return;
    }
    say("reality_saved", {}, { kind: "success" });
    emit("me");
  });
}

function askExclusion() {
  const days = Number($("exclusion-days").value);
  if (!Number.isInteger(days) || days < 1 || days > MAX_DAYS) {
    say("err_days", {}, { kind: "error" });
    $("exclusion-days").focus();
    return;
  }
  const confirm = el("button", {
    type: "button",
    class: "danger",
    id: "exclusion-confirm",
    text: t("exclude_confirm", { days }),
    onclick: () => exclude(days, confirm),
  });
  const cancel = el("button", {
    type: "button",
    text: t("exclude_cancel"),
    onclick: () => {
      $("exclusion-confirm-box").replaceChildren();
      $("exclusion-submit").focus();
    },
  });
  $("exclusion-confirm-box").replaceChildren(confirm, cancel);
  confirm.focus();
}

async function exclude(days, button) {
  await busy([button], async () => {
    clearMessage();
    try {
      state.me = await api.selfExclude(days);
    } catch (error) {
      sayError(error);
      return;
    }
    $("exclusion-confirm-box").replaceChildren();
    say("excluded_until", { when: formatWhen(state.me.self_excluded_until) }, { kind: "info" });
    emit("me");
  });
}

/** Fill the limit fields and the pending increases from `state.me`. */
export function renderAccount() {
  const me = state.me;
  if (!me) return;
  $("moderators-needed").hidden = me.limits.moderators_set !== false;
  for (const [period, key] of Object.entries(LIMIT_KEYS)) {
    const field = $(`limit-${period}`);
    if (document.activeElement !== field) field.value = centsToField(me.limits[key]);
  }
  const reality = $("reality-minutes");
  if (document.activeElement !== reality) reality.value = String(me.reality_check_minutes ?? "");
  const pending = me.limits.pending ?? [];
  $("limits-pending").replaceChildren(
    ...(pending.length ? [el("h4", { text: t("pending_title") })] : []),
    ...pending.map((p) =>
      el("p", {
        text: t("pending", {
          period: t(`period_${p.period}`),
          amount: p.amount_cents === null ? t("no_limit") : formatCents(p.amount_cents),
          when: formatWhen(p.effective_at),
        }),
      }),
    ),
  );
}
