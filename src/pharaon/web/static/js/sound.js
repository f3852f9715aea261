// Sound effects, made here with the Web Audio API (no sound file anywhere): a rasp while a
// grid is scratched, a chime when a lot is won. Off until the player turns them on; the choice
// is kept in localStorage. The AudioContext is made only inside a user gesture (the switch,
// or a press while sound is on), as browsers ask.
// Each effect that starts is told on <body>: data-sound-played (its name), data-sound-count.

const STORAGE_KEY = "pharaon.sound";
const RUB_IDLE_MS = 120; // the rasp stops this long after the last scratch move
const CHIME = [880, 1108.73, 1318.51, 1760]; // A major arpeggio, Hz

let context = null;
let noise = null; // one second of white noise, made once
let rasp = null; // { source, gain, timer } while scratching

export function soundOn() {
  return localStorage.getItem(STORAGE_KEY) === "on";
}

/** The switch « Sons » (`checkbox`): shows the kept choice and keeps the new one. */
export function initSound(checkbox) {
  checkbox.checked = soundOn();
  checkbox.addEventListener("change", () => {
    localStorage.setItem(STORAGE_KEY, checkbox.checked ? "on" : "off");
    if (checkbox.checked) wake();
    else stopRasp();
  });
  // A press anywhere is a gesture: the moment to make (or resume) the context.
  const gesture = () => {
    if (soundOn()) wake();
  };
  document.addEventListener("pointerdown", gesture, { capture: true });
  document.addEventListener("keydown", gesture, { capture: true });
}

function wake() {
  if (!context) {
    const Context = window.AudioContext ?? window.webkitAudioContext;
    if (!Context) return null;
    context = new Context();
  }
  if (context.state === "suspended") context.resume().catch(() => {});
  return context;
}

/** The context, running, when sound is on and a gesture has made it; else null. */
function ready() {
  if (!soundOn() || !context) return null;
  if (context.state !== "running") {
    context.resume().catch(() => {});
    return null;
  }
  return context;
}

function told(name) {
  const body = document.body.dataset;
  body.soundPlayed = name;
  body.soundCount = String(Number(body.soundCount ?? 0) + 1);
}

/** A scratch move: the rasp starts (or goes on) and fades out once the moves stop. */
export function rub() {
  const ctx = ready();
  if (!ctx) return;
  if (!rasp) {
    if (!noise) {
      noise = ctx.createBuffer(1, ctx.sampleRate, ctx.sampleRate);
      const data = noise.getChannelData(0);
      for (let i = 0; i < data.length; i += 1) data[i] = Math.random() * 2 - 1;
    }
    const source = ctx.createBufferSource();
    source.buffer = noise;
    source.loop = true;
    const band = ctx.createBiquadFilter();
    band.type = "bandpass";
    band.frequency.value = 2600;
    band.Q.value = 0.7;
    const gain = ctx.createGain();
    gain.gain.setValueAtTime(0, ctx.currentTime);
    gain.gain.linearRampToValueAtTime(0.12, ctx.currentTime + 0.03);
    source.connect(band).connect(gain).connect(ctx.destination);
    source.start();
    rasp = { source, gain, timer: 0 };
    told("scratch");
  }
  clearTimeout(rasp.timer);
  rasp.timer = setTimeout(stopRasp, RUB_IDLE_MS);
}

function stopRasp() {
  if (!rasp || !context) return;
  const { source, gain, timer } = rasp;
  rasp = null;
  clearTimeout(timer);
  const now = context.currentTime;
  gain.gain.cancelScheduledValues(now);
  gain.gain.setValueAtTime(gain.gain.value, now);
  gain.gain.linearRampToValueAtTime(0, now + 0.08);
  source.stop(now + 0.1);
}

/** The win's chime: four notes going up, each ringing out. */
export function chime() {
  const ctx = ready();
  if (!ctx) return;
  const start = ctx.currentTime + 0.02;
  CHIME.forEach((frequency, i) => {
    const at = start + i * 0.11;
    const tone = ctx.createOscillator();
    tone.type = "triangle";
    tone.frequency.value = frequency;
    const gain = ctx.createGain();
    gain.gain.setValueAtTime(0, at);
    gain.gain.linearRampToValueAtTime(0.18, at + 0.01);
    gain.gain.exponentialRampToValueAtTime(0.0001, at + 0.7);
    tone.connect(gain).connect(ctx.destination);
    tone.start(at);
    tone.stop(at + 0.75);
  });
  told("win");
}
