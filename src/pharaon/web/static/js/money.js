// Money is integer euro cents everywhere; people see it the French way in both languages:
// 150 → "1,50 €", 2500000 → "25 000,00 €" (thousands grouped by a narrow no-break space,
// exactly like pharaon.game.money.format_cents on the server).

const NARROW_NBSP = "\u202f";

/** "1,50 €" for 150 cents. */
export function formatCents(cents) {
  const sign = cents < 0 ? "-" : "";
  const abs = Math.abs(cents);
  const euros = Math.floor(abs / 100);
  const rest = abs % 100;
  const grouped = String(euros).replace(/\B(?=(\d{3})+(?!\d))/g, NARROW_NBSP);
  return `${sign}${grouped},${String(rest).padStart(2, "0")} €`;
}

/** "1 €" for a whole-euro stake, else the full form. */
export function formatStake(cents) {
  return cents % 100 === 0 ? `${cents / 100} €` : formatCents(cents);
}

/**
 * Cents from what a person typed: "10", "10,5", "10.50", "1 000,00". Null when it is not an
 * amount of euros with at most two decimals (no floats: the digits are read as text).
 */
export function parseEuros(text) {
  const cleaned = text.replace(/[\s\u202f\u00a0€]/g, "");
  const match = /^(\d{1,9})(?:[.,](\d{1,2}))?$/.exec(cleaned);
  if (!match) return null;
  const fraction = (match[2] ?? "").padEnd(2, "0");
  return Number(match[1]) * 100 + Number(fraction);
}

/** "10,50" for 1050 cents: the value an amount field is filled with. */
export function centsToField(cents) {
  if (cents === null || cents === undefined) return "";
  return `${Math.floor(cents / 100)},${String(cents % 100).padStart(2, "0")}`;
}
