// Keys revealed at close (docs/proofs.md): a closed block (sold out or deactivated) offers an
// admin « Publier les clés »: the vendor's and the operator's key files are read here, in the
// browser, and sent as hex (POST /operator/blocks/{id}/keys); the server publishes them for every
// block the pair made. Once published, anyone reads them (GET /api/v1/audit/blocks/{id}/keys)
// and the block's row shows them. A key is never put in a message.

import { ApiError } from "../../js/api.js";
import { api } from "./api.js";
import { t } from "./i18n.js";
import { $, el, isAdmin, say, sayError } from "./shared.js";

const CLOSED = new Set(["sold_out", "deactivated"]);
const HEX = /^(?:[0-9a-f]{2}){16,64}$/; // 16 to 64 bytes, as pool/keys.py takes them
const published = new Map(); // block id → its publication
let chosen = null; // the block id the form is for

/** A block's published keys (public), or null before they are. */
async function revealed(blockId) {
  const response = await fetch(`/api/v1/audit/blocks/${blockId}/keys`, {
    headers: { Accept: "application/json" },
    cache: "no-store",
  });
  if (!response.ok) return null;
  return response.json();
}

function remember(keys) {
  for (const id of keys.block_ids) published.set(id, keys);
}

/** Read the publications of the closed blocks not known yet to be published. */
export async function load(blocks) {
  const asked = blocks.filter((b) => CLOSED.has(b.state) && !published.has(b.block_id));
  const found = await Promise.all(asked.map((b) => revealed(b.block_id).catch(() => null)));
  for (const keys of found) if (keys) remember(keys);
}

function key(label, hex) {
  return [el("dt", { text: label }), el("dd", {}, el("code", { text: hex }))];
}

/** What a block's row shows of its keys: the published keys, or an admin's button on a closed
 * block; nothing otherwise. */
export function cell(b) {
  const keys = published.get(b.block_id);
  if (keys) {
    return el(
      "details",
      { class: "keys", dataset: { blockId: b.block_id } },
      el("summary", { text: t("keys_published") }),
      el("dl", {}, key(t("vendor_key"), keys.vendor_key), key(t("operator_key"), keys.operator_key)),
    );
  }
  if (!isAdmin() || !CLOSED.has(b.state)) return null;
  return el("button", {
    type: "button",
    class: "small publish-keys",
    text: t("keys_publish"),
    "aria-label": t("keys_publish_label", { id: b.block_id }),
    dataset: { blockId: b.block_id },
    onclick: () => choose(b.block_id),
  });
}

export function render() {
  if (chosen !== null) $("keys-title").textContent = t("keys_title", { id: chosen });
}

function choose(blockId) {
  chosen = blockId;
  $("keys-form").reset();
  $("keys-form").hidden = false;
  render();
  $("keys-vendor").focus();
}

function close() {
  chosen = null;
  $("keys-form").reset();
  $("keys-form").hidden = true;
}

/** The key in a chosen file, as hex; null if it holds none. */
async function read(input) {
  const file = input.files[0];
  if (!file || file.size > 1024) return null;
  const text = (await file.text()).trim().toLowerCase().replace(/^0x/, "");
  return HEX.test(text) ? text : null;
}

/** Why the server refused, in the console's words (its detail names the blocks, never a key). */
function refusal(error, blockId) {
  if (!(error instanceof ApiError)) return null;
  if (error.status === 422) return t("keys_wrong", { id: blockId });
  if (error.status === 409) {
    const ids = [...error.detail.matchAll(/block (\d+) \((\w+)\)/g)].map((m) => m[1]);
    if (ids.length > 0) return t("keys_pair_open", { ids: ids.join(", ") });
  }
  return null;
}

export function setUp(refresh) {
  $("keys-cancel").addEventListener("click", close);
  $("keys-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const blockId = chosen;
    if (blockId === null) return;
    const vendor = await read($("keys-vendor"));
    const operator = await read($("keys-operator"));
    if (vendor === null || operator === null) {
      say(() => t(vendor === null ? "keys_vendor_not_hex" : "keys_operator_not_hex"), "error");
      return;
    }
    const button = $("keys-submit");
    button.disabled = true;
    let keys;
    try {
      keys = await api.revealKeys(blockId, vendor, operator);
    } catch (error) {
      const said = refusal(error, blockId);
      if (said === null) sayError(error);
      else say(() => refusal(error, blockId), "error");
      return;
    } finally {
      button.disabled = false;
    }
    remember(keys);
    close();
    say(() => t("keys_done", { ids: keys.block_ids.join(", ") }), "success");
    await refresh();
  });
}
