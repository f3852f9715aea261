// The sale's signed receipt (docs/proofs.md, "Receipts"): kept in this browser when a purchase
// answers it, and held against the play's proof when « Vérifier » asks for it — the signature
// checked here with the published key (Ed25519, WebCrypto), then every field the receipt signed
// compared with the proof's: the rule of service/receipts.py (PROOF_FIELDS), mirrored.

const PREFIX = "pharaon.receipt.";
const FORMAT = "pharaon/receipt/v2";
// The fields a receipt signs, in the order of its lines, each named as a play's proof names it.
const FIELDS = [
  "play_id",
  "block_id",
  "emission",
  "block_number",
  "price_cents",
  "serial",
  "time",
  "merkle_root",
];
// Each of them but the time, the proof must say the same.
const PROOF_FIELDS = FIELDS.filter((name) => name !== "time");
const TEXTS = new Set(["emission", "merkle_root", "time"]); // the others are integers
// Each format's lines, in order, and the field each names; v1's, from before the block's
// emission, number and price were signed, are still read.
const LINES = {
  [FORMAT]: Object.fromEntries(FIELDS.map((name) => [name, name])),
  "pharaon/receipt/v1": { play: "play_id", block: "block_id", serial: "serial", time: "time", root: "merkle_root" },
};

/** Keep the receipt of a purchase's answer `play`, if it has one. */
export function keep(play) {
  if (!play.receipt) return;
  try {
    localStorage.setItem(PREFIX + play.play_id, JSON.stringify(play.receipt));
  } catch {
    // storage full or refused: the receipt is not kept, the play goes on
  }
}

/** The receipt kept for play `playId`, or null. */
export function kept(playId) {
  try {
    const text = localStorage.getItem(PREFIX + playId);
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

function fromBase64(text) {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** What the receipt's text says, by the proof's field names (integers as numbers), or null if it
 * is not a receipt's text. */
function parse(text) {
  const lines = text.split("\n");
  const names = LINES[lines[0]];
  if (!names || lines.at(-1) !== "" || lines.length !== Object.keys(names).length + 2) return null;
  const order = Object.keys(names);
  const values = {};
  for (const [i, line] of lines.slice(1, -1).entries()) {
    const space = line.indexOf(" ");
    if (line.slice(0, space) !== order[i]) return null;
    const name = names[order[i]];
    const value = line.slice(space + 1);
    values[name] = TEXTS.has(name) ? value : Number(value);
  }
  return values;
}

/**
 * The first field of PROOF_FIELDS where `proof` is not the sale the receipt's `said` signed:
 * { field, signed, given }, or null when the proof says the same in each (a v1 receipt's missing
 * fields are not compared).
 */
function disagreement(said, proof) {
  for (const field of PROOF_FIELDS) {
    if (field in said && proof[field] !== said[field]) {
      return { field, signed: shown(said[field]), given: field in proof ? shown(proof[field]) : "—" };
    }
  }
  return null;
}

function shown(value) {
  return (typeof value === "string" ? value : String(JSON.stringify(value))).slice(0, 80);
}

/**
 * Check `receipt` against `proof` under the receipts' key `publicKey` (base64): { ok, time } or
 * { ok: false, reason, params } with an i18n key for the reason (and its values).
 */
export async function checkReceipt(receipt, proof, publicKey) {
  let valid;
  try {
    const key = await crypto.subtle.importKey("raw", fromBase64(publicKey), { name: "Ed25519" }, false, [
      "verify",
    ]);
    const data = new TextEncoder().encode(receipt.text);
    valid = await crypto.subtle.verify({ name: "Ed25519" }, key, fromBase64(receipt.signature), data);
  } catch {
    valid = false;
  }
  if (!valid) return { ok: false, reason: "receipt_bad_signature" };
  const said = parse(receipt.text);
  if (!said) return { ok: false, reason: "receipt_bad_signature" };
  const differs = disagreement(said, proof);
  if (differs) return { ok: false, reason: "receipt_other_sale", params: differs };
  return { ok: true, time: said.time };
}
