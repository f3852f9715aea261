// The players screen: search by e-mail, then a player's file (last plays, ledger, deposit
// limits, a self-exclusion or a suspension in force, the identity's state, the withdrawals, the
// operators' notes); an admin verifies the identity there (what the document says, the IBAN)
// and takes a measure on the account (note, suspend, exclude for days, lift, close), with a
// reason the player reads on their page.

import { formatCents, formatStake } from "../../js/money.js";
import { api } from "./api.js";
import { formatWhen, ledgerKind, t } from "./i18n.js";
import { $, busy, el, isAdmin, say, table } from "./shared.js";

const MEASURES = ["note", "suspend", "exclude", "lift", "close"];

let found = null;
let file = null;

function playerRow(p) {
  return el(
    "tr",
    { dataset: { playerId: p.player_id } },
    el("td", { text: String(p.player_id) }),
    el("td", { text: p.email }),
    el("td", { text: formatWhen(p.created_at) }),
    el("td", { class: "num", text: formatCents(p.balance_cents) }),
    el("td", { text: p.self_excluded_until ? formatWhen(p.self_excluded_until) : "—" }),
    el("td", { class: "standing", text: standingText(p) }),
    el(
      "td",
      {},
      el("button", {
        type: "button",
        class: "small",
        text: t("open_file"),
        "aria-label": t("open_file_label", { id: p.player_id }),
        onclick: () => open(p.player_id),
      }),
    ),
  );
}

function subTable(title, id, headers, rows) {
  const head = el(
    "tr",
    {},
    ...headers.map(([key, num]) =>
      el("th", { scope: "col", class: num ? "num" : null, text: t(key) }),
    ),
  );
  return el(
    "section",
    { class: "card" },
    el("h3", { text: title }),
    rows.length === 0
      ? el("p", { class: "note", text: t("none") })
      : el(
          "div",
          { class: "table-wrap" },
          el("table", { class: "data", id }, el("thead", {}, head), el("tbody", {}, ...rows)),
        ),
  );
}

function fact(key, value, id = null) {
  return el("div", {}, el("dt", { text: t(key) }), el("dd", { id, text: value }));
}

/** Closed, suspended for the banned-gamblers list, suspended (until when) or open, in words.
 * A match an operator has lifted since (a namesake) reads as the account stands. */
function standingText(p) {
  if (p.closed_at) return t("standing_closed", { when: formatWhen(p.closed_at) });
  if (p.banned && p.suspended && !p.suspended_until) return t("standing_banned");
  if (p.suspended) {
    return p.suspended_until
      ? t("standing_excluded", { when: formatWhen(p.suspended_until) })
      : t("standing_suspended");
  }
  return t("standing_open");
}

function measureForm(player) {
  const days = el("input", {
    id: "measure-days",
    type: "number",
    min: "1",
    max: "1095",
    value: "30",
    required: true,
  });
  const daysField = el(
    "div",
    { class: "field", hidden: true },
    el("label", { for: "measure-days", text: t("measure_days") }),
    days,
  );
  const kind = el(
    "select",
    {
      id: "measure-kind",
      onchange: () => {
        daysField.hidden = kind.value !== "exclude";
        days.disabled = daysField.hidden;
      },
    },
    ...MEASURES.map((m) => el("option", { value: m, text: t(`measure_${m}`) })),
  );
  days.disabled = true;
  const reason = el("textarea", { id: "measure-reason", name: "reason", maxlength: "500", rows: "4", required: true });
  const submit = el("button", { id: "measure-submit", type: "submit", text: t("measure_submit") });
  return el(
    "form",
    {
      id: "measure-form",
      class: "card measures",
      hidden: !isAdmin(),
      onsubmit: async (event) => {
        event.preventDefault();
        const body = { measure: kind.value, reason: reason.value.trim() };
        if (!body.reason) return;
        if (body.measure === "exclude") body.days = Number(days.value);
        const done = await busy(submit, () => api.measure(player.player_id, body));
        if (done === undefined) return;
        say(() => t("measure_taken", { measure: t(`measure_${body.measure}`), id: player.player_id }), "success");
        await open(player.player_id, false);
      },
    },
    el("h3", { text: t("measures_title") }),
    el("p", { class: "note", text: t("measures_note") }),
    el("div", { class: "field" }, el("label", { for: "measure-kind", text: t("measure_kind") }), kind),
    daysField,
    el("div", { class: "field" }, el("label", { for: "measure-reason", text: t("measure_reason") }), reason),
    submit,
  );
}

const DOCUMENTS = ["id_card", "passport", "residence_permit"];

/** Provisional (the days left) or verified, in words. */
function identityText(identity) {
  if (identity.state === "verified") return t("identity_verified", { when: formatWhen(identity.verified_at) });
  if (identity.days_left === 0) return t("identity_overdue");
  return t("identity_provisional", { days: identity.days_left, when: formatWhen(identity.deadline) });
}

function field(id, key, props = {}) {
  return el(
    "div",
    { class: "field" },
    el("label", { for: id, text: t(key) }),
    el("input", { id, required: true, ...props }),
  );
}

/** What was seen at the check; or, for an admin while provisional, the form to verify. */
function identityCard(player, identity, check) {
  const title = el("h3", { text: t("identity_title") });
  if (check) {
    return el(
      "section",
      { class: "card", id: "identity-check" },
      title,
      el("p", {
        text: t("identity_seen", {
          kind: t(`document_${check.document_kind}`),
          ref: check.document_ref,
          last: check.last_name,
          first: check.first_names,
          birth: check.birth_date,
          iban: check.iban,
          when: formatWhen(check.checked_at),
          operator: check.operator,
        }),
      }),
    );
  }
  const kind = el(
    "select",
    { id: "identity-kind", name: "document_kind" },
    ...DOCUMENTS.map((d) => el("option", { value: d, text: t(`document_${d}`) })),
  );
  const submit = el("button", { id: "identity-submit", type: "submit", class: "primary", text: t("identity_submit") });
  return el(
    "form",
    {
      id: "identity-form",
      class: "card",
      hidden: !isAdmin() || identity.state !== "provisional",
      onsubmit: async (event) => {
        event.preventDefault();
        const body = {
          document_kind: kind.value,
          document_ref: $("identity-ref").value.trim(),
          last_name: $("identity-last").value.trim(),
          first_names: $("identity-first").value.trim(),
          birth_date: $("identity-birth").value,
          iban: $("identity-iban").value.trim(),
        };
        const done = await busy(submit, () => api.verifyIdentity(player.player_id, body));
        if (done === undefined) return;
        say(() => t("identity_done", { id: player.player_id }), "success");
        await open(player.player_id, false);
      },
    },
    title,
    el("p", { class: "note", text: t("identity_note") }),
    el("div", { class: "field" }, el("label", { for: "identity-kind", text: t("identity_kind") }), kind),
    // Each input named as its field in the request: a 422 names it (shared.js errorText).
    field("identity-ref", "identity_ref", { name: "document_ref", maxlength: "40" }),
    field("identity-last", "identity_last", { name: "last_name", maxlength: "100", autocomplete: "off" }),
    field("identity-first", "identity_first", {
      name: "first_names",
      maxlength: "200",
      autocomplete: "off",
    }),
    field("identity-birth", "identity_birth", { name: "birth_date", type: "date" }),
    field("identity-iban", "identity_iban", {
      name: "iban",
      maxlength: "64",
      autocomplete: "off",
      spellcheck: "false",
    }),
    submit,
  );
}

function limitText(cents) {
  return cents === null ? t("no_limit") : formatCents(cents);
}

function renderFile() {
  const holder = $("player-file");
  holder.hidden = file === null;
  if (file === null) return;
  const { player, plays, ledger, limits, notes, identity, withdrawals } = file;
  const facts = el(
    "dl",
    { class: "summary" },
    fact("file_balance", formatCents(player.balance_cents)),
    fact("file_created", formatWhen(player.created_at)),
    fact(
      "file_excluded",
      player.self_excluded_until
        ? `${formatWhen(player.self_excluded_until)} (${t(`pause_${player.pause_kind}`)})`
        : t("file_not_excluded"),
      "file-excluded",
    ),
    fact("file_standing", standingText(player), "file-standing"),
    fact("file_identity", identityText(identity), "file-identity"),
  );
  const limitList = el(
    "ul",
    { id: "file-limits" },
    el("li", { text: `${t("limit_daily")} : ${limitText(limits.daily_cents)}` }),
    el("li", { text: `${t("limit_weekly")} : ${limitText(limits.weekly_cents)}` }),
    el("li", { text: `${t("limit_monthly")} : ${limitText(limits.monthly_cents)}` }),
    ...limits.pending.map((p) =>
      el("li", {
        class: "pending",
        text: t("pending_limit", {
          period: t(`limit_${p.period}`),
          amount: limitText(p.amount_cents),
          when: formatWhen(p.effective_at),
        }),
      }),
    ),
  );
  holder.replaceChildren(
    el(
      "section",
      { class: "card" },
      el("h3", {
        id: "file-title",
        tabindex: "-1",
        text: t("file_title", { id: player.player_id, email: player.email }),
      }),
      facts,
      el("h4", { text: t("limits_title") }),
      limitList,
    ),
    identityCard(player, identity, file.identity_check),
    measureForm(player),
    subTable(
      t("file_withdrawals"),
      "file-withdrawals",
      [["col_withdrawal"], ["col_when"], ["col_amount", true], ["col_withdrawal_state"], ["col_reason"], ["col_decided_by"]],
      withdrawals.map((w) =>
        el(
          "tr",
          { dataset: { state: w.state } },
          el("td", { text: String(w.withdrawal_id) }),
          el("td", { text: formatWhen(w.requested_at) }),
          el("td", { class: "num", text: formatCents(w.amount_cents) }),
          el("td", { text: t(`withdrawal_${w.state}`) }),
          el("td", { class: "reason", text: w.reason ?? "—" }),
          el("td", { text: w.decided_by ?? "—" }),
        ),
      ),
    ),
    subTable(
      t("notes_title"),
      "file-notes",
      [["col_when"], ["col_measure"], ["col_reason"], ["col_until"], ["col_operator"]],
      notes.map((n) =>
        el(
          "tr",
          { dataset: { measure: n.measure } },
          el("td", { text: formatWhen(n.created_at) }),
          el("td", { text: t(`measure_${n.measure}`) }),
          el("td", { class: "reason", text: n.reason }),
          el("td", { text: n.until ? formatWhen(n.until) : "—" }),
          el("td", { text: n.operator ?? "—" }),
        ),
      ),
    ),
    subTable(
      t("plays_title"),
      "file-plays",
      [
        ["col_play"],
        ["col_when"],
        ["col_block"],
        ["col_unit", true],
        ["col_stake", true],
        ["col_prize", true],
      ],
      plays.map((p) =>
        el(
          "tr",
          {},
          el("td", { text: String(p.play_id) }),
          el("td", { text: formatWhen(p.created_at) }),
          el("td", { text: String(p.block_id) }),
          el("td", { class: "num", text: String(p.serial) }),
          el("td", { class: "num", text: formatStake(p.stake_cents) }),
          el("td", { class: "num", text: formatCents(p.prize_cents) }),
        ),
      ),
    ),
    subTable(
      t("ledger_title"),
      "file-ledger",
      [["col_transaction"], ["col_when"], ["col_kind"], ["col_amount", true]],
      ledger.map((x) =>
        el(
          "tr",
          {},
          el("td", { text: String(x.transaction_id) }),
          el("td", { text: formatWhen(x.created_at) }),
          el("td", { class: "kind", dataset: { kind: x.kind }, text: ledgerKind(x.kind, x.amount_cents) }),
          el("td", {
            class: `num ${x.amount_cents < 0 ? "minus" : ""}`,
            text: formatCents(x.amount_cents),
          }),
        ),
      ),
    ),
  );
}

export function render() {
  if (found !== null) table("players-rows", "players-empty", found.map(playerRow));
  renderFile();
}

async function open(playerId, focus = true) {
  const got = await busy(null, () => api.player(playerId));
  if (got === undefined) return;
  file = got;
  if (found !== null) {
    found = found.map((p) => (p.player_id === playerId ? got.player : p));
    table("players-rows", "players-empty", found.map(playerRow));
  }
  renderFile();
  if (focus) $("file-title").focus();
}

export function setUp() {
  $("players-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const email = $("players-email").value.trim();
    if (!email) return;
    const got = await busy($("players-submit"), () => api.players(email));
    if (got === undefined) return;
    found = got;
    file = null;
    render();
  });
}
