// The console's door to the operator API (/api/v1/operator/...). The same errors as the player's
// page (ApiError, NetworkError); the session is the operator's cookie, and every change carries
// X-CSRF-Token from the pharaon_operator_csrf cookie.

import { ApiError, NetworkError } from "../../js/api.js";

const BASE = "/api/v1/operator";

function csrfToken() {
  for (const part of document.cookie.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === "pharaon_operator_csrf") return decodeURIComponent(rest.join("="));
  }
  return null;
}

/** Whether the page holds an operator session's cookies (the session may have expired). */
export function hasSessionCookie() {
  return csrfToken() !== null;
}

/**
 * Call the operator API. `body` is sent as JSON, `form` as multipart; `as` says how to read a
 * success: "json" (null for 204) or "blob". Throws ApiError or NetworkError.
 */
async function call(method, path, { body, form, as = "json" } = {}) {
  const headers = { Accept: as === "json" ? "application/json" : "*/*" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET") {
    const csrf = csrfToken();
    if (csrf) headers["X-CSRF-Token"] = csrf;
  }
  let response;
  try {
    response = await fetch(BASE + path, {
      method,
      headers,
      body: form ?? (body === undefined ? undefined : JSON.stringify(body)),
      credentials: "same-origin",
      cache: "no-store",
    });
  } catch (error) {
    throw new NetworkError(error);
  }
  if (!response.ok) {
    let data = null;
    try {
      data = await response.json();
    } catch {
      // an answer without the error shape: the status says enough
    }
    throw new ApiError(
      response.status,
      data?.error ?? `http_${response.status}`,
      data?.detail ?? response.statusText,
    );
  }
  if (response.status === 204) return null;
  try {
    return as === "blob" ? await response.blob() : await response.json();
  } catch (error) {
    throw new NetworkError(error);
  }
}

function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

export const api = {
  logIn: (email, password, totpCode) =>
    call("POST", "/sessions", { body: { email, password, totp_code: totpCode } }),
  logOut: () => call("DELETE", "/sessions/current"),
  me: () => call("GET", "/me"),
  blocks: () => call("GET", "/blocks"),
  upload: (file) => {
    const form = new FormData();
    form.append("file", file, file.name);
    return call("POST", "/blocks", { form });
  },
  deactivate: (blockId, reason) =>
    call("POST", `/blocks/${blockId}/deactivate`, { body: { reason } }),
  verifyBlock: (blockId) => call("GET", `/blocks/${blockId}/verification`),
  approveBlock: (blockId) => call("POST", `/blocks/${blockId}/approval`),
  revealKeys: (blockId, vendorKey, operatorKey) =>
    call("POST", `/blocks/${blockId}/keys`, {
      body: { vendor_key: vendorKey, operator_key: operatorKey },
    }),
  stock: () => call("GET", "/stock"),
  sales: (since, until) => call("GET", `/sales${query({ since, until })}`),
  players: (email) => call("GET", `/players${query({ email })}`),
  player: (playerId) => call("GET", `/players/${playerId}`),
  measure: (playerId, body) => call("POST", `/players/${playerId}/measures`, { body }),
  verifyIdentity: (playerId, body) => call("POST", `/players/${playerId}/identity`, { body }),
  identities: (state) => call("GET", `/identities${query({ state })}`),
  withdrawals: (state) => call("GET", `/withdrawals${query({ state })}`),
  approve: (withdrawalId) => call("POST", `/withdrawals/${withdrawalId}/approve`),
  reject: (withdrawalId, reason) =>
    call("POST", `/withdrawals/${withdrawalId}/reject`, { body: { reason } }),
  audit: (offset, limit, kind, actor) =>
    call("GET", `/audit${query({ offset, limit, kind, actor })}`),
  checkAudit: () => call("POST", "/audit/check"),
  exportSales: (from, to) => call("POST", "/exports", { body: { from, to }, as: "blob" }),
};
