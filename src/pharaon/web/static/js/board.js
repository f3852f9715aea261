// One play drawn: the four grids in their 2 × 2 layout (covered ones are buttons « Grille N »),
// then, once finished, the bonus enigma, the winning cells marked and the lot.
// Cells are addressed as the API gives them: [grid, row, column] numbered from 1.

import { celebrate } from "./celebrate.js";
import { formatCents } from "./money.js";
import { symbolName, t } from "./i18n.js";
import { makeScratchable } from "./scratch.js";
import { symbolSvg } from "./symbols.js";
import { el, prefersReducedMotion } from "./ui.js";

const SCRATCH_MS = 650;

/** The bonus grid position (0..15, row by row) of grid cell (g, r, c), or -1 if it is not in
 * the bonus grid; the geometry comes from the rules (`bonus_cells`), not from here. */
function bonusPosition(rules, g, r, c) {
  return rules.bonus_cells.findIndex(([bg, br, bc]) => bg === g && br === r && bc === c);
}

function describeLine(cells) {
  const rows = new Set(cells.map((cell) => cell[1]));
  const columns = new Set(cells.map((cell) => cell[2]));
  if (rows.size === 1) return t("row", { n: cells[0][1] });
  if (columns.size === 1) return t("column", { n: cells[0][2] });
  return t("diagonal");
}

function cellNode(rules, code, key) {
  const name = symbolName(rules, code);
  return el(
    "span",
    { class: `cell sym-${code}`, role: "img", "aria-label": name, dataset: { cell: key, code } },
    symbolSvg(code),
  );
}

export class PlayView {
  /**
   * `interactive`: covered grids are buttons calling `onReveal(grid, origin)` when clicked
   * or scratched (scratch.js).
   */
  constructor({ rules, interactive = false, onReveal = null }) {
    this.rules = rules;
    this.interactive = interactive;
    this.onReveal = onReveal;
    this.play = null;
    this.root = el("div", { class: "play" });
  }

  /** Draw `play` from scratch, with no animation (first show, resume, language switch). */
  render(play) {
    this.play = play;
    this.slots = [1, 2, 3, 4].map((n) => el("div", { class: "slot", dataset: { grid: n } }));
    this.board = el("div", { class: "board", role: "group", "aria-label": t("board") }, this.slots);
    this.result = el("div", { class: "result", hidden: true });
    this.bonus = el("section", { class: "bonus", hidden: true });
    this.root.replaceChildren(this.board, this.result, this.bonus);
    for (let n = 1; n <= 4; n += 1) this.fillSlot(n, false);
    if (play.finished) this.showFinished(false);
  }

  /**
   * Move to a newer state of the same play: uncover what came uncovered (animated), and
   * bring the bonus forward once finished, with a win's moment. Resolves when the animations
   * are over.
   */
  async update(play, { origin = null, stagger = false } = {}) {
    const before = this.play;
    this.play = play;
    const motion = !prefersReducedMotion();
    const opened = [];
    for (let n = 1; n <= 4; n += 1) {
      if (!before.grids[n - 1] && play.grids[n - 1]) opened.push(n);
    }
    for (const [i, n] of opened.entries()) {
      if (stagger && motion && i > 0) await sleep(220);
      this.fillSlot(n, motion, n === origin?.grid ? origin : null);
    }
    if (motion && opened.length) await sleep(SCRATCH_MS);
    if (play.finished && !before.finished) await this.showFinished(motion, true);
  }

  fillSlot(n, animate, origin = null) {
    const slot = this.slots[n - 1];
    const codes = this.play.grids[n - 1];
    if (!codes) {
      slot.replaceChildren(this.coverNode(n));
      return;
    }
    const cells = [...codes].map((code, i) =>
      cellNode(this.rules, code, `${n}-${Math.floor(i / 4) + 1}-${(i % 4) + 1}`),
    );
    const grid = el("div", { class: "grid", role: "group", "aria-label": t("grid", { n }) }, cells);
    slot.replaceChildren(grid);
    // A grid scratched open has no cover left to draw open.
    if (animate && !origin?.scratched) {
      const scratch = el("div", { class: "scratch", "aria-hidden": "true" });
      const box = slot.getBoundingClientRect();
      const x = origin?.x !== undefined ? origin.x - box.left : box.width / 2;
      const y = origin?.y !== undefined ? origin.y - box.top : box.height / 2;
      scratch.style.setProperty("--x", `${x}px`);
      scratch.style.setProperty("--y", `${y}px`);
      slot.append(scratch);
      const done = () => scratch.remove();
      scratch.addEventListener("animationend", done, { once: true });
      setTimeout(done, SCRATCH_MS + 300);
    }
  }

  coverNode(n) {
    const label = t("grid", { n });
    const inner = [
      el("span", { class: "cover-title", text: label }),
      el("span", { class: "cover-hint", text: this.interactive ? t("scratch") : t("covered") }),
    ];
    if (!this.interactive) {
      return el("div", { class: "cover", role: "img", "aria-label": `${label}, ${t("covered")}` }, inner);
    }
    const cover = el(
      "button",
      {
        class: "cover",
        type: "button",
        "aria-label": label,
        dataset: { grid: n },
        onclick: (event) => {
          const pointer = event.detail > 0 ? { x: event.clientX, y: event.clientY } : {};
          this.onReveal?.(n, { grid: n, ...pointer });
        },
      },
      inner,
    );
    makeScratchable(cover, {
      title: label,
      hint: t("scratch"),
      onUncover: (point) => this.onReveal?.(n, { grid: n, ...point }),
    });
    return cover;
  }

  /**
   * Mark the winning cells, show the bonus enigma and announce the lot. `live`: the play just
   * finished here, so a win gets its moment (celebrate.js); resolves when it is over.
   */
  async showFinished(animate, live = false) {
    const play = this.play;
    const winning = t("winning");
    for (const node of this.board.querySelectorAll(".cell")) {
      const [g, r, c] = node.dataset.cell.split("-").map(Number);
      if (bonusPosition(this.rules, g, r, c) >= 0) node.classList.add("bonus-zone");
    }
    const bonusCells = [...play.bonus].map((code, i) => cellNode(this.rules, code, `b-${i}`));
    const groups = (play.combinations ?? []).map((combo, index) => {
      const group = [];
      for (const [g, r, c] of combo.cells) {
        const node = this.board.querySelector(`[data-cell="${g}-${r}-${c}"]`);
        markWin(node, combo.kind, index, winning);
        group.push(node);
        const position = bonusPosition(this.rules, g, r, c);
        if (combo.kind === "bonus") {
          markWin(bonusCells[position], "bonus", index, winning);
          group.push(bonusCells[position]);
        }
      }
      return group.filter(Boolean);
    });
    this.bonus.replaceChildren(
      el("h3", { text: t("bonus_title") }),
      el("p", { class: "note", text: t("bonus_note") }),
      el("div", { class: "bonus-grid", role: "group", "aria-label": t("bonus_title") }, bonusCells),
    );
    this.bonus.hidden = false;

    const won = play.prize_cents > 0;
    const amount = formatCents(play.prize_cents);
    const combos = (play.combinations ?? []).map((combo, index) => {
      const symbol = symbolName(this.rules, combo.symbol);
      const what =
        combo.kind === "line"
          ? t("combo_line", { symbol, grid: combo.grid, where: describeLine(combo.cells) })
          : t("combo_bonus", { symbol });
      // Pointing at (or focusing) a combination picks out its own cells.
      const spot = (on) => this.spot(index + 1, on);
      return el(
        "li",
        {
          tabindex: "0",
          onmouseenter: () => spot(true),
          onmouseleave: () => spot(false),
          onfocus: () => spot(true),
          onblur: () => spot(false),
        },
        el("span", { text: what }),
        " ",
        el("strong", { class: "amount", text: formatCents(combo.gain_cents) }),
      );
    });
    this.result.replaceChildren(
      el(
        "p",
        { class: `lot ${won ? "won" : "lost"}`, tabindex: "-1", dataset: { prizeCents: play.prize_cents } },
        withAmount(won ? "lot_won" : "lot_none", amount),
      ),
      ...(combos.length ? [el("h3", { text: t("combos") }), el("ul", { class: "combos" }, combos)] : []),
    );
    this.result.hidden = false;
    this.board.classList.add("finished");
    if (animate) {
      this.board.classList.add("bring-forward");
      this.bonus.classList.add("enter");
    }
    if (live && won) {
      const node = this.result.querySelector(".lot .amount");
      const cents = play.prize_cents;
      await celebrate({ root: this.root, groups, amount: node, cents, motion: animate });
    }
  }

  /** Pick out (or stop picking out) the cells of combination number `number` (from 1). */
  spot(number, on) {
    for (const node of this.root.querySelectorAll(".cell[data-combos]")) {
      const mine = node.dataset.combos.split(" ").includes(String(number));
      node.classList.toggle("spot", on && mine);
    }
  }

  /** The button of the first covered grid after `grid` (wrapping), or null. */
  nextCover(grid = 0) {
    for (let i = 1; i <= 4; i += 1) {
      const n = ((grid + i - 1) % 4) + 1;
      const button = this.slots[n - 1].querySelector("button.cover");
      if (button) return button;
    }
    return null;
  }

  lotNode() {
    return this.result.querySelector(".lot");
  }
}

function markWin(node, kind, index, winning) {
  if (!node) return;
  node.classList.add("win", `win-${kind}`);
  const combos = node.dataset.combos ? `${node.dataset.combos} ${index + 1}` : String(index + 1);
  node.dataset.combos = combos;
  if (!node.getAttribute("aria-label").endsWith(winning)) {
    node.setAttribute("aria-label", `${node.getAttribute("aria-label")}, ${winning}`);
  }
}

/** The text of `key` with its {amount} (if it says one) kept on one line. */
function withAmount(key, amount) {
  const [before, after] = t(key, { amount: "\u0000" }).split("\u0000");
  if (after === undefined) return [before];
  return [before, el("span", { class: "amount", text: amount }), after];
}

function sleep(ms) {
  return new Promise((resolve) => {
    setTimeout(resolve, ms);
  });
}
