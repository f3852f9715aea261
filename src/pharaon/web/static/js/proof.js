// Checking a play's proof in the browser (docs/proofs.md): the unit's leaf hashed up its audit
// path must give the Merkle root published for its block. WebCrypto SHA-256, nothing else.

const LEAF = 0x00;
const NODE = 0x01;
const HEX = /^[0-9a-f]{64}$/;

function hexToBytes(hex) {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function bytesToHex(bytes) {
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

/** SHA-256(0x00 ‖ serial u32 BE ‖ ticket 67 ASCII bytes ‖ lot_cents u64 BE). */
export async function leafHash(serial, ticket, lotCents) {
  const data = new Uint8Array(1 + 4 + ticket.length + 8);
  const view = new DataView(data.buffer);
  data[0] = LEAF;
  view.setUint32(1, serial);
  for (let i = 0; i < ticket.length; i++) data[5 + i] = ticket.charCodeAt(i);
  view.setBigUint64(5 + ticket.length, BigInt(lotCents));
  return sha256(data);
}

/** The root (hex) that `proof`'s unit and path lead to. */
export async function rootOf(proof) {
  let node = await leafHash(proof.serial, proof.ticket, proof.lot_cents);
  for (const step of proof.path) {
    if (!HEX.test(step.hash) || (step.side !== "L" && step.side !== "R")) {
      throw new Error("malformed path");
    }
    const sibling = hexToBytes(step.hash);
    const data = new Uint8Array(65);
    data[0] = NODE;
    data.set(step.side === "L" ? sibling : node, 1);
    data.set(step.side === "L" ? node : sibling, 33);
    node = await sha256(data);
  }
  return bytesToHex(node);
}

/**
 * Whether `proof` shows that `play` (as the history shows it) is a unit of the published block
 * `block` (from GET /blocks): { ok, reason } where reason is a key of the texts when not ok.
 */
export async function checkProof(proof, play, block) {
  if (!block) return { ok: false, reason: "proof_no_block" };
  const same =
    proof.play_id === play.play_id &&
    proof.block_id === play.block_id &&
    proof.serial === play.serial &&
    proof.ticket === play.ticket &&
    proof.lot_cents === play.prize_cents;
  if (!same) return { ok: false, reason: "proof_other_unit" };
  if (!Number.isInteger(proof.serial) || !/^[PYOXJS-]{67}$/.test(proof.ticket)) {
    return { ok: false, reason: "proof_malformed" };
  }
  let root;
  try {
    root = await rootOf(proof);
  } catch {
    return { ok: false, reason: "proof_malformed" };
  }
  if (root !== block.merkle_root) return { ok: false, reason: "proof_not_in_block" };
  return { ok: true, root };
}
