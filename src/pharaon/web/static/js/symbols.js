// The six symbols, drawn for this page as one inline SVG sprite; a cell shows one with <use>.
// Each has its own silhouette and colour so they stay apart at phone size:
// P pharaon (head with a blue-and-gold nemes), Y pyramide (sandy, shaded), O œil (eye of Horus,
// white and blue), X croix (red ankh), J chacal (black Anubis head in profile), S scarabée
// (green scarab pushing the sun).

const SPRITE = `
<svg xmlns="http://www.w3.org/2000/svg" aria-hidden="true" focusable="false"
     class="symbol-sprite">
 <defs>
  <clipPath id="nemes-clip">
   <path d="M32 5C19 5 14 13 14 22L7 51Q7 55 11 55H22V40H42V55H53Q57 55 57 51L50 22C50 13 45 5 32 5Z"/>
  </clipPath>
  <clipPath id="pyramid-clip"><path d="M32 7L61 56H3Z"/></clipPath>
 </defs>

 <symbol id="sym-P" viewBox="0 0 64 64">
  <path d="M32 5C19 5 14 13 14 22L7 51Q7 55 11 55H22V40H42V55H53Q57 55 57 51L50 22C50 13 45 5 32 5Z"
        fill="#f2c230"/>
  <g clip-path="url(#nemes-clip)" stroke="#1f4aa8" stroke-width="3.2">
   <path d="M0 11H64M0 18H64M0 25H64M0 32H64M0 39H64M0 46H64M0 53H64"/>
  </g>
  <path d="M32 5C19 5 14 13 14 22L7 51Q7 55 11 55H22V40H42V55H53Q57 55 57 51L50 22C50 13 45 5 32 5Z"
        fill="none" stroke="#5a3a06" stroke-width="1.6"/>
  <path d="M22 21H42V35Q42 45 32 47Q22 45 22 35Z" fill="#c8864a" stroke="#5a3a06" stroke-width="1.4"/>
  <rect x="20" y="17" width="24" height="5" rx="1.5" fill="#f2c230" stroke="#5a3a06" stroke-width="1.2"/>
  <path d="M32 8Q28.5 12 32 17Q35.5 12 32 8Z" fill="#d63b2f" stroke="#5a3a06" stroke-width="1"/>
  <path d="M24.5 28Q27.5 25.5 30.5 28Q27.5 30 24.5 28ZM33.5 28Q36.5 25.5 39.5 28Q36.5 30 33.5 28Z"
        fill="#1b1b1b"/>
  <path d="M24 28H22.5M40 28H41.5" stroke="#1b1b1b" stroke-width="1.4"/>
  <path d="M32 30V36M29 40Q32 41.5 35 40" fill="none" stroke="#6b3f1c" stroke-width="1.4"/>
  <path d="M29 46H35L34 59Q32 61 30 59Z" fill="#1f4aa8" stroke="#f2c230" stroke-width="1.2"/>
 </symbol>

 <symbol id="sym-Y" viewBox="0 0 64 64">
  <path d="M3 56H61" stroke="#a0692a" stroke-width="3" stroke-linecap="round"/>
  <path d="M32 7L61 56H3Z" fill="#f3c873"/>
  <path d="M32 7L61 56H38Z" fill="#b97a2e"/>
  <g clip-path="url(#pyramid-clip)" stroke="#8a5a1f" stroke-width="1.3" fill="none">
   <path d="M0 19H64M0 31H64M0 43H64"/>
   <path d="M26 19V31M38 19V31M20 31V43M32 31V43M44 31V43M14 43V56M26 43V56M50 43V56"/>
  </g>
  <path d="M32 7L37.5 16.5H26.5Z" fill="#fff3b0" stroke="#8a5a1f" stroke-width="1"/>
  <path d="M32 7L61 56H3Z" fill="none" stroke="#6e4514" stroke-width="1.8" stroke-linejoin="round"/>
 </symbol>

 <symbol id="sym-O" viewBox="0 0 64 64">
  <path d="M7 18Q32 4 59 15L58 21Q32 11 8 24Z" fill="#17377f"/>
  <path d="M8 32Q32 13 57 30Q32 45 8 32Z" fill="#fff" stroke="#17377f" stroke-width="3.2"
        stroke-linejoin="round"/>
  <path d="M57 30H63" stroke="#17377f" stroke-width="3.2" stroke-linecap="round"/>
  <circle cx="32" cy="30.5" r="7.5" fill="#17377f"/>
  <circle cx="32" cy="30.5" r="3.6" fill="#0b0b0b"/>
  <circle cx="34.2" cy="28.4" r="1.4" fill="#fff"/>
  <path d="M27 40L24 58" stroke="#17377f" stroke-width="4" stroke-linecap="round"/>
  <path d="M36 40Q43 53 51 52Q58 50 55 44Q52 40 48.5 44" fill="none" stroke="#17377f"
        stroke-width="3.4" stroke-linecap="round"/>
 </symbol>

 <symbol id="sym-X" viewBox="0 0 64 64">
  <ellipse cx="32" cy="16" rx="9" ry="11.5" fill="none" stroke="#6d1010" stroke-width="9"/>
  <ellipse cx="32" cy="16" rx="9" ry="11.5" fill="none" stroke="#d6342a" stroke-width="5.5"/>
  <path d="M12 28.5H52V36.5H12ZM28 35H36L39.5 60H24.5Z" fill="#d6342a" stroke="#6d1010"
        stroke-width="1.8" stroke-linejoin="round"/>
  <path d="M28 28.5H36" stroke="#d6342a" stroke-width="2.5"/>
 </symbol>

 <symbol id="sym-J" viewBox="0 0 64 64">
  <path d="M15 61L18 42Q13 33 19 25L21 3L30 19Q34 18 36 19L41 5L43 24Q47 26 51 30L61 36
           Q62.5 40.5 57.5 41.5L45 42.5Q41 47 37 49V61Z" fill="#161616" stroke="#000"
        stroke-width="1" stroke-linejoin="round"/>
  <path d="M23 9L24.5 22M40 11L40.5 23" stroke="#e2b23a" stroke-width="2" stroke-linecap="round"/>
  <path d="M33.5 29Q37.5 26 41.5 28.5Q37.5 31.5 33.5 29Z" fill="#f2c230"/>
  <circle cx="38.3" cy="28.8" r="1.1" fill="#161616"/>
  <circle cx="59" cy="37.5" r="1.7" fill="#555"/>
  <path d="M17 50H37M16.5 55H37" stroke="#e2b23a" stroke-width="3"/>
  <path d="M16 52.5H37" stroke="#1f4aa8" stroke-width="2"/>
 </symbol>

 <symbol id="sym-S" viewBox="0 0 64 64">
  <circle cx="32" cy="8" r="6.5" fill="#e8742c" stroke="#8c3b0c" stroke-width="1.2"/>
  <g stroke="#0e3f37" stroke-width="2.6" stroke-linecap="round" fill="none">
   <path d="M27 20L21 15L24 11M37 20L43 15L40 11"/>
   <path d="M21 31L11 28L7 33M43 31L53 28L57 33"/>
   <path d="M22 44L12 48L10 55M42 44L52 48L54 55"/>
  </g>
  <path d="M25 21Q32 13 39 21Z" fill="#0e3f37"/>
  <ellipse cx="32" cy="25.5" rx="11.5" ry="6.5" fill="#1c8f7a" stroke="#0e3f37" stroke-width="1.6"/>
  <path d="M20.5 31Q19.5 52 32 59Q44.5 52 43.5 31Z" fill="#23a98f" stroke="#0e3f37"
        stroke-width="1.6"/>
  <path d="M32 31.5V58" stroke="#0e3f37" stroke-width="1.6"/>
  <path d="M25 36Q24 47 30 53M39 36Q40 47 34 53" fill="none" stroke="#8fe3cf" stroke-width="1.3"/>
 </symbol>
 </svg>`;

/** Put the sprite into the page once; cells then refer to it. */
export function installSymbols() {
  if (document.getElementById("sym-P")) return;
  const holder = document.createElement("div");
  holder.innerHTML = SPRITE.trim();
  document.body.prepend(holder.firstElementChild);
}

/** A decorative SVG of symbol `code` (the text alternative is on its container). */
export function symbolSvg(code) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 64 64");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const use = document.createElementNS(ns, "use");
  use.setAttribute("href", `#sym-${code}`);
  svg.append(use);
  return svg;
}
