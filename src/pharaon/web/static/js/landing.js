// The logged-out page's top: the game shown before the sign-up. A sample board (an example
// drawn here, not a unit of any block), the top lots at each price and the odds of a lot, all
// computed from the rules the server serves (rules.toml), never written by hand.

import { formatCents, formatStake } from "./money.js";
import { lang, symbolName, t } from "./i18n.js";
import { symbolSvg } from "./symbols.js";
import { el, on, state } from "./ui.js";

// An example grid, row by row: four pyramids on the second row win the pyramid's line.
const SAMPLE = ["PXJS", "YYYY", "SOXJ", "JSPX"];
const SAMPLE_ROW = 1;
const TOP_LOTS = 3;

const $ = (id) => document.getElementById(id);

/** "3,91" (fr) or "3.91" (en): block units per winning unit, two decimals. */
export function oddsText(rules) {
  const winning = rules.prizes.reduce((sum, p) => sum + p.lots, 0);
  const locale = lang() === "en" ? "en-GB" : "fr-FR";
  return new Intl.NumberFormat(locale, { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(
    rules.block_size / winning,
  );
}

function sampleBoard(rules) {
  const cells = SAMPLE.flatMap((row, r) =>
    [...row].map((code) =>
      el(
        "span",
        {
          class: `cell sym-${code}${r === SAMPLE_ROW ? " win" : ""}`,
          role: "img",
          "aria-label": symbolName(rules, code),
        },
        symbolSvg(code),
      ),
    ),
  );
  const pyramid = rules.symbols.find((s) => s.code === "Y");
  return [
    el("div", { class: "sample-grid", role: "group", "aria-label": t("landing_sample") }, ...cells),
    el("p", {
      class: "note",
      text: t("landing_sample_note", { amount: formatCents(pyramid.line_cents) }),
    }),
  ];
}

function topLots(rules) {
  const top = [...rules.prizes].sort((a, b) => b.amount_cents - a.amount_cents).slice(0, TOP_LOTS);
  return el(
    "ul",
    { class: "top-lots" },
    ...rules.prices_cents.map((price) =>
      el(
        "li",
        { dataset: { price } },
        el("strong", { text: formatCents((top[0].amount_cents * price) / 100) }),
        " ",
        t("landing_top", {
          price: formatStake(price),
          next: top
            .slice(1)
            .map((p) => formatCents((p.amount_cents * price) / 100))
            .join(", "),
        }),
      ),
    ),
  );
}

export function renderLanding() {
  const box = $("landing");
  const rules = state.rules;
  if (!box || !rules) return;
  $("landing-board").replaceChildren(...sampleBoard(rules));
  $("landing-top").replaceChildren(topLots(rules));
  $("landing-odds").textContent = t("landing_odds", { odds: oddsText(rules) });
}

export function initLanding() {
  on("lang", renderLanding);
}
