// The blocks screen: every block's sales and remaining prizes; an admin loads a block file and
// deactivates a block (an analyst sees neither control; the server refuses them with 403).

import { formatCents, formatStake } from "../../js/money.js";
import { api } from "./api.js";
import { t } from "./i18n.js";
import { $, busy, el, isAdmin, say, table } from "./shared.js";

let blocks = [];
let chosen = null; // the block id the deactivation form is for

function lots(remaining) {
  if (remaining.length === 0) return t("no_lot");
  return remaining.map(([lot, n]) => `${formatCents(lot)} × ${n}`).join(", ");
}

function row(b) {
  const state = t(`state_${b.state}`);
  const testTag = b.is_test ? el("span", { class: "tag", text: t("test_block") }) : null;
  const button = el("button", {
    type: "button",
    class: "danger small deactivate",
    text: t("deactivate"),
    "aria-label": t("deactivate_label", { id: b.block_id }),
    dataset: { blockId: b.block_id },
    hidden: !isAdmin() || b.state === "deactivated" || b.state === "exhausted",
    onclick: () => choose(b.block_id),
  });
  return el(
    "tr",
    { dataset: { blockId: b.block_id } },
    el("td", { text: t("block_ref", { id: b.block_id, number: b.block_number }) }),
    el("td", {}, b.emission, testTag),
    el("td", { text: formatStake(b.price_cents) }),
    el(
      "td",
      { class: `state state-${b.state}` },
      state,
      b.deactivation_reason
        ? el("small", { class: "reason", text: ` — ${b.deactivation_reason}` })
        : null,
    ),
    el("td", { class: "num", text: String(b.block_size) }),
    el("td", { class: "num sold", text: String(b.sold) }),
    el("td", { class: "num remaining", text: String(b.remaining) }),
    el("td", { class: "lots", text: lots(b.remaining_lots) }),
    el("td", {}, button),
  );
}

export function render() {
  table("blocks-rows", "blocks-empty", blocks.map(row));
  $("upload-form").hidden = !isAdmin();
  $("analyst-note").hidden = isAdmin();
  if (chosen !== null) $("deactivate-title").textContent = t("deactivate_title", { id: chosen });
}

export async function refresh() {
  const listed = await busy(null, () => api.blocks());
  if (listed === undefined) return;
  blocks = listed;
  render();
}

function choose(blockId) {
  chosen = blockId;
  $("deactivate-form").hidden = false;
  $("deactivate-title").textContent = t("deactivate_title", { id: blockId });
  $("deactivate-reason").value = "";
  $("deactivate-reason").focus();
}

function close() {
  chosen = null;
  $("deactivate-form").hidden = true;
}

export function setUp() {
  $("deactivate-cancel").addEventListener("click", close);
  $("deactivate-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const blockId = chosen;
    const reason = $("deactivate-reason").value.trim();
    if (blockId === null || !reason) return;
    const done = await busy($("deactivate-submit"), async () => {
      await api.deactivate(blockId, reason);
      return true;
    });
    if (!done) return;
    close();
    say(() => t("deactivated", { id: blockId }), "success");
    await refresh();
  });
  $("upload-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = $("upload-file").files[0];
    if (!file) return;
    const loaded = await busy($("upload-submit"), () => api.upload(file));
    if (!loaded) return;
    $("upload-form").reset();
    say(() => t("uploaded", { id: loaded.block_id }), "success");
    await refresh();
  });
}
