// A win's moment, when a play just finished on the board: its winning combinations lit one
// after another, the lot counting up from 0 to its amount, and the chime (when sound is on).
// Under prefers-reduced-motion everything is there at once. The text ends on the exact amount.

import { formatCents } from "./money.js";
import { chime } from "./sound.js";

const STEP_MS = 380; // between two combinations lit
const COUNT_MS = 1000; // the count-up's length

/**
 * `root`: the play's node; `groups[i]`: the cell nodes of combination i + 1, in the order the
 * result lists them; `amount`: the node showing the lot, `cents` the lot. The root says how
 * many combinations are lit so far in data-lit (class "celebrating" while they come one by
 * one). Resolves when the moment is over.
 */
export async function celebrate({ root, groups, amount, cents, motion }) {
  chime();
  if (!motion) {
    for (const cells of groups) light(cells);
    root.dataset.lit = String(groups.length);
    return;
  }
  await Promise.all([lightInTurn(root, groups), countUp(amount, cents)]);
}

function light(cells) {
  for (const node of cells) node.classList.add("lit");
}

async function lightInTurn(root, groups) {
  root.classList.add("celebrating");
  for (const [index, cells] of groups.entries()) {
    if (index > 0) await sleep(STEP_MS);
    light(cells);
    root.dataset.lit = String(index + 1);
  }
  root.classList.remove("celebrating");
}

/** The text of `node` from 0 to `cents` in COUNT_MS (eased), ending on formatCents(cents). */
function countUp(node, cents) {
  return new Promise((resolve) => {
    const start = performance.now();
    let over = false;
    const end = () => {
      if (over) return;
      over = true;
      node.textContent = formatCents(cents);
      delete node.dataset.counting;
      resolve();
    };
    const frame = (now) => {
      if (over) return;
      // A frame's time is when the frame began, which may be before `start` was read.
      const progress = Math.min(1, Math.max(0, (now - start) / COUNT_MS));
      if (progress >= 1) {
        end();
        return;
      }
      const eased = 1 - (1 - progress) ** 3;
      node.textContent = formatCents(Math.round(cents * eased));
      requestAnimationFrame(frame);
    };
    node.dataset.counting = "1";
    node.textContent = formatCents(0);
    requestAnimationFrame(frame);
    // A hidden tab gets no frames: the lot is still told in full, a little late.
    setTimeout(end, COUNT_MS + 500);
  });
}

function sleep(ms) {
  return new Promise((resolve) => {
    setTimeout(resolve, ms);
  });
}
