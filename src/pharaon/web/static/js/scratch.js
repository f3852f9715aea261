// Scratching a covered « Jouer » grid: a <canvas> painted as the cover, over the grid's button,
// cleared where a pointer or a finger rubs it. Past `THRESHOLD` of its area cleared, the grid
// counts as uncovered and `onUncover` is called once, as a click would. A plain click (little
// movement) and Enter / Space stay with the button: they uncover at once.
// The canvas tells how much is cleared in data-scratched-share (0 to 1, two decimals).

import { rub } from "./sound.js";
import { el, prefersReducedMotion } from "./ui.js";

const THRESHOLD = 0.5;
const BRUSH = 0.09; // the brush's radius, as a share of the cover's width
const CLICK_SLOP_PX = 8; // a press that moves less than this is a click, not a scratch
const SAMPLES = 48; // the share is measured on SAMPLES × SAMPLES points

/**
 * Lay a scratchable canvas over `cover` (a button « Grille N »), painted with `title` and
 * `hint`. `onUncover({x, y})` gets the last point rubbed, in client pixels.
 */
export function makeScratchable(cover, { title, hint, onUncover }) {
  const canvas = el("canvas", {
    class: "scratch-cover",
    "aria-hidden": "true",
    dataset: { scratchedShare: "0" },
  });
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  if (!ctx) return; // no canvas: the button alone, a click uncovers
  cover.classList.add("scratchable");
  cover.append(canvas);

  let painted = false;
  let done = false;
  let measuring = false;
  let moved = 0; // CSS pixels travelled since the last press on this cover
  let scratchedPress = false; // the last press here was a scratch: its click is not a click
  const last = new Map(); // pointerId → last point on the canvas (bitmap pixels)
  let lastClient = null;

  // Painted at its first layout, at the device's resolution; later resizes only stretch it.
  const sizer = new ResizeObserver(() => {
    if (painted || canvas.clientWidth === 0) return;
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(canvas.clientWidth * ratio);
    canvas.height = Math.round(canvas.clientHeight * ratio);
    paint(ctx, canvas.width, canvas.height, title, hint);
    painted = true;
    sizer.disconnect();
  });
  sizer.observe(canvas);

  const toBitmap = (event) => {
    const box = canvas.getBoundingClientRect();
    return {
      x: ((event.clientX - box.left) * canvas.width) / box.width,
      y: ((event.clientY - box.top) * canvas.height) / box.height,
    };
  };

  const scrape = (event) => {
    if (!painted) return;
    const point = toBitmap(event);
    const from = last.get(event.pointerId) ?? point;
    ctx.globalCompositeOperation = "destination-out";
    ctx.lineCap = "round";
    ctx.lineJoin = "round";
    ctx.lineWidth = 2 * BRUSH * canvas.width;
    ctx.beginPath();
    ctx.moveTo(from.x, from.y);
    ctx.lineTo(point.x + 0.01, point.y);
    ctx.stroke();
    ctx.globalCompositeOperation = "source-over";
    last.set(event.pointerId, point);
    lastClient = { x: event.clientX, y: event.clientY };
    if (!measuring) {
      measuring = true;
      requestAnimationFrame(measure);
    }
  };

  const measure = () => {
    measuring = false;
    const share = clearedShare(ctx, canvas.width, canvas.height);
    canvas.dataset.scratchedShare = share.toFixed(2);
    if (!done && share >= THRESHOLD) {
      done = true;
      canvas.classList.add("cleared");
      if (prefersReducedMotion()) canvas.hidden = true;
      onUncover({ ...lastClient, scratched: true });
    }
  };

  canvas.addEventListener("pointerdown", (event) => {
    if (event.pointerType === "mouse" && event.button !== 0) return;
    // A finger's pointer is captured by where it landed: let it go, so one stroke may rub
    // across several grids, as on a card.
    if (canvas.hasPointerCapture(event.pointerId)) canvas.releasePointerCapture(event.pointerId);
    moved = 0;
    scratchedPress = false;
    last.delete(event.pointerId);
    scrape(event);
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!(event.buttons & 1)) return; // hovering: no scratch
    const before = last.get(event.pointerId);
    if (before) {
      const point = toBitmap(event);
      const cssPerPixel = canvas.getBoundingClientRect().width / canvas.width;
      moved += Math.hypot(point.x - before.x, point.y - before.y) * cssPerPixel;
    } else {
      moved += CLICK_SLOP_PX; // came in from another grid: a scratch
    }
    if (moved >= CLICK_SLOP_PX) scratchedPress = true;
    scrape(event);
    rub();
  });
  const lift = (event) => last.delete(event.pointerId);
  canvas.addEventListener("pointerup", lift);
  canvas.addEventListener("pointerleave", lift);
  canvas.addEventListener("pointercancel", lift);
  // Capture phase on the button: runs before its own click listener, which uncovers.
  cover.addEventListener(
    "click",
    (event) => {
      if (event.detail > 0 && scratchedPress) {
        scratchedPress = false;
        event.stopImmediatePropagation();
      }
    },
    { capture: true },
  );
}

/** The share (0..1) of the canvas whose alpha is below one half. */
function clearedShare(ctx, width, height) {
  if (width === 0 || height === 0) return 0;
  const { data } = ctx.getImageData(0, 0, width, height);
  let clear = 0;
  for (let i = 0; i < SAMPLES; i += 1) {
    const y = Math.floor(((i + 0.5) * height) / SAMPLES);
    for (let j = 0; j < SAMPLES; j += 1) {
      const x = Math.floor(((j + 0.5) * width) / SAMPLES);
      if (data[(y * width + x) * 4 + 3] < 128) clear += 1;
    }
  }
  return clear / (SAMPLES * SAMPLES);
}

/** The cover's look (as .cover in style.css): gold, light from the top left, fine stripes. */
function paint(ctx, width, height, title, hint) {
  const light = ctx.createRadialGradient(width * 0.3, height * 0.25, 0, width * 0.3, height * 0.25, width);
  light.addColorStop(0, "#ffe9a3");
  light.addColorStop(0.7, "#d8a531");
  light.addColorStop(1, "#b5841c");
  ctx.fillStyle = light;
  ctx.fillRect(0, 0, width, height);
  ctx.save();
  ctx.strokeStyle = "rgb(255 255 255 / 0.18)";
  ctx.lineWidth = width / 40;
  const step = width / 16;
  for (let d = -height; d < width; d += step) {
    ctx.beginPath();
    ctx.moveTo(d, height);
    ctx.lineTo(d + height, 0);
    ctx.stroke();
  }
  ctx.restore();
  const font = getComputedStyle(document.body).fontFamily;
  ctx.fillStyle = "#3b2a05";
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.font = `800 ${Math.round(width * 0.1)}px ${font}`;
  ctx.fillText(title, width / 2, height * 0.45, width * 0.9);
  ctx.font = `${Math.round(width * 0.065)}px ${font}`;
  ctx.fillText(hint, width / 2, height * 0.6, width * 0.9);
}
