// The sale's signed receipt (docs/proofs.md, "Receipts"): kept in this browser when a purchase
// answers it, and held against the play's proof when « Vérifier » asks for it — the signature
// checked here with the published key (Ed25519, WebCrypto), then the play, the unit and the
// block's root the receipt names compared with the proof's.

const PREFIX = "pharaon.receipt.";
const FORMAT = "pharaon/receipt/v1";
const FIELDS = ["play", "block", "serial", "time", "root"];

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

/** What the receipt's text says, or null if it is not a receipt's text. */
function parse(text) {
  const lines = text.split("\n");
  if (lines[0] !== FORMAT || lines.at(-1) !== "" || lines.length !== FIELDS.length + 2) return null;
  const values = {};
  lines.slice(1, -1).forEach((line, i) => {
    const space = line.indexOf(" ");
    values[line.slice(0, space)] = line.slice(space + 1);
    values[`_${i}`] = line.slice(0, space);
  });
  if (FIELDS.some((name, i) => values[`_${i}`] !== name)) return null;
  return values;
}

/**
 * Check `receipt` against `proof` under the receipts' key `publicKey` (base64): { ok, time } or
 * { ok: false, reason } with an i18n key for the reason.
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
  const same =
    Number(said.play) === proof.play_id &&
    Number(said.serial) === proof.serial &&
    said.root === proof.merkle_root;
  return same ? { ok: true, time: said.time } : { ok: false, reason: "receipt_other_sale" };
}
