// The one door to the server: the HTTP API of docs/api.md, nothing else.
// Cookie session; every POST/PUT/DELETE carries X-CSRF-Token read from the pharaon_csrf cookie.

const BASE = "/api/v1";

/** The server answered with an error: `code` is the contract's error code. */
export class ApiError extends Error {
  /** `fields`: what the answer says beside the code and the detail (an end date, a reason). */
  constructor(status, code, detail, fields = {}) {
    super(`${status} ${code}: ${detail}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.fields = fields;
  }
}

/** No answer (or a cut-off one): the request may or may not have reached the server. */
export class NetworkError extends Error {
  constructor(cause) {
    super("network failure");
    this.code = "network";
    this.cause = cause;
  }
}

/** Whether the page holds a session's cookies (the session itself may have expired). */
export function hasSessionCookie() {
  return cookie("pharaon_csrf") !== null;
}

function cookie(name) {
  for (const part of document.cookie.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return null;
}

/** A fresh key for one press; the same key is sent again only to retry that press. */
export function newIdempotencyKey() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  // Plain-HTTP pages off localhost have no randomUUID; getRandomValues is everywhere.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * Call the API and return the parsed JSON (null for 204).
 * Throws ApiError for an error answer, NetworkError when no complete answer came.
 */
export async function request(method, path, { body, idempotencyKey } = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET") {
    const csrf = cookie("pharaon_csrf");
    if (csrf) headers["X-CSRF-Token"] = csrf;
  }
  if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
  let response;
  try {
    response = await fetch(BASE + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
      cache: "no-store",
    });
  } catch (error) {
    throw new NetworkError(error);
  }
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch (error) {
    if (response.ok) throw new NetworkError(error);
  }
  if (!response.ok) {
    const { error, detail, ...fields } = data ?? {};
    throw new ApiError(
      response.status,
      error ?? `http_${response.status}`,
      detail ?? response.statusText,
      fields,
    );
  }
  return data;
}

export const api = {
  signUp: (email, password, birthDate) =>
    request("POST", "/players", { body: { email, password, birth_date: birthDate } }),
  logIn: (email, password) => request("POST", "/sessions", { body: { email, password } }),
  logOut: () => request("DELETE", "/sessions/current"),
  me: () => request("GET", "/me"),
  setLimits: (limits) => request("PUT", "/me/limits", { body: limits }),
  setRealityCheck: (minutes) => request("PUT", "/me/reality-check", { body: { minutes } }),
  sessionFigures: () => request("GET", "/me/session"),
  notes: () => request("GET", "/me/notes"),
  selfExclude: (days) => request("POST", "/me/self-exclusion", { body: { days } }),
  coolOff: (hours) => request("POST", "/me/cool-off", { body: { hours } }),
  changePassword: (current, next) =>
    request("PUT", "/me/password", { body: { current_password: current, new_password: next } }),
  closeAccount: (password) => request("POST", "/me/closure", { body: { password } }),
  deposit: (amountCents, key) =>
    request("POST", "/deposits", { body: { amount_cents: amountCents }, idempotencyKey: key }),
  withdraw: (amountCents, key) =>
    request("POST", "/withdrawals", { body: { amount_cents: amountCents }, idempotencyKey: key }),
  withdrawals: () => request("GET", "/withdrawals"),
  buy: (stakeCents, mode, key) =>
    request("POST", "/plays", { body: { stake_cents: stakeCents, mode }, idempotencyKey: key }),
  // A grid shown without a write; the play ends with one write that uncovers every grid.
  grid: (playId, grid) => request("GET", `/plays/${playId}/grids/${grid}`),
  finish: (playId) =>
    request("POST", `/plays/${playId}/reveal`, { body: { grids: [1, 2, 3, 4] } }),
  play: (playId) => request("GET", `/plays/${playId}`),
  plays: (limit, before) =>
    request("GET", `/plays?limit=${limit}${before ? `&before=${before}` : ""}`),
  proof: (playId) => request("GET", `/plays/${playId}/proof`),
  blocks: () => request("GET", "/blocks"),
  remaining: (stakeCents) => request("GET", `/prizes/remaining?stake_cents=${stakeCents}`),
  rules: () => request("GET", "/rules"),
  receiptKey: () => request("GET", "/receipts/key"),
};
