// The audit screen: the log newest first, paged and filtered by kind and actor, and the same
// checks as `pharaon audit` (POST /operator/audit/check) on a button, said in the console's
// words from their codes and figures (the server's English is for `pharaon audit` and logs).

import { api } from "./api.js";
import { actorText, findingText, formatWhen, kindText, t } from "./i18n.js";
import { $, busy, el } from "./shared.js";

// The kinds of audit records, offered in the filter (each said by kindText).
const KINDS = [
  "account_closed",
  "account_opened",
  "banned_list_loaded",
  "block_approved",
  "block_deactivated",
  "block_keys_revealed",
  "block_loaded",
  "cool_off",
  "deposit",
  "deposit_limits",
  "deposit_refused",
  "export",
  "identity_suspended",
  "identity_verified",
  "login",
  "login_failed",
  "logout",
  "loss_limit",
  "operator_added",
  "password_changed",
  "play_finished_by_server",
  "player_banned",
  "player_close",
  "player_exclude",
  "player_lift",
  "player_note",
  "player_suspend",
  "prize",
  "purchase",
  "purchase_refused",
  "reality_check",
  "self_exclusion",
  "stake_limits",
  "trace_export",
  "withdrawal",
  "withdrawal_paid",
  "withdrawal_refused",
  "withdrawal_rejected",
];

let offset = 0;
let size = 25; // records per page, from #audit-limit
let asked = 0; // requests made: only the last one's answer is shown
let page = null;
let check = null;

/** A record's payload as the JSON it is, its accents as themselves (the chain hashes the
 * stored text, which escapes them). */
function readable(payload) {
  try {
    return JSON.stringify(JSON.parse(payload));
  } catch {
    return payload; // not JSON: the chain's check says so
  }
}

function row(line) {
  return el(
    "tr",
    { dataset: { seq: line.seq } },
    el("td", { class: "num", text: String(line.seq) }),
    el("td", { text: formatWhen(line.created_at) }),
    el("td", { class: "kind", title: line.kind, dataset: { kind: line.kind }, text: kindText(line.kind) }),
    el("td", { class: "actor", title: line.actor, text: actorText(line.actor) }),
    el("td", { class: "payload" }, el("code", { text: readable(line.payload) })),
    el(
      "td",
      { class: "hash", title: line.sha256 },
      el("code", { text: `${line.sha256.slice(0, 12)}…` }),
    ),
  );
}

function renderCheck() {
  const box = $("audit-result");
  if (check === null) {
    box.replaceChildren();
    return;
  }
  box.className = `audit-result ${check.ok ? "ok" : "bad"}`;
  box.replaceChildren(
    el("p", {
      id: "audit-verdict",
      class: "verdict",
      text: t(check.ok ? "audit_ok" : "audit_bad"),
    }),
    el(
      "ul",
      { class: "checks" },
      ...check.checks.map((c) =>
        el(
          "li",
          { class: c.passed ? "ok" : "bad", dataset: { code: c.code } },
          el("strong", { text: t(c.passed ? "check_ok" : "check_bad") }),
          ` ${t(`check_${c.code}`)}`,
          c.found.length
            ? el("small", { text: ` — ${c.found.map(findingText).join(t("list_sep"))}` })
            : null,
        ),
      ),
    ),
  );
}

/** The filter's kinds, each said in words (again at a language switch). */
function fillKinds() {
  $("audit-kinds").replaceChildren(
    ...KINDS.map((k) => el("option", { value: k, label: kindText(k) })),
  );
}

export function render() {
  fillKinds();
  renderCheck();
  if (page === null) return;
  $("audit-rows").replaceChildren(...page.lines.map(row));
  $("audit-position").textContent =
    page.total === 0
      ? t("audit_empty")
      : t("audit_position", {
          first: offset + 1,
          last: offset + page.lines.length,
          total: page.total,
        });
  $("audit-newer").disabled = offset === 0;
  $("audit-older").disabled = offset + size >= page.total;
}

export async function refresh() {
  const kind = $("audit-kind").value.trim() || null;
  const actor = $("audit-actor").value.trim() || null;
  size = Number($("audit-limit").value);
  asked += 1;
  const mine = asked;
  const got = await busy(null, () => api.audit(offset, size, kind, actor));
  if (got === undefined || mine !== asked) return; // a later request's answer wins
  page = got;
  render();
}

export function setUp() {
  fillKinds();
  $("audit-limit").addEventListener("change", () => {
    offset = 0;
    refresh();
  });
  $("audit-form").addEventListener("submit", (event) => {
    event.preventDefault();
    offset = 0;
    refresh();
  });
  $("audit-newer").addEventListener("click", () => {
    offset = Math.max(0, offset - size);
    refresh();
  });
  $("audit-older").addEventListener("click", () => {
    offset += size;
    refresh();
  });
  $("audit-check").addEventListener("click", async () => {
    const got = await busy($("audit-check"), () => api.checkAudit());
    if (got === undefined) return;
    check = got;
    renderCheck();
  });
}
