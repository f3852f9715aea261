// The API's reference at /api/docs, drawn from the server's OpenAPI document: each operation
// by tag, with its parameters, its body's schema and its answers. Nothing loaded from outside.

import { el } from "./ui.js";

const METHODS = ["get", "post", "put", "patch", "delete"];

function schemaName(schema) {
  if (!schema) return "";
  if (schema.$ref) return schema.$ref.split("/").pop();
  if (schema.type === "array") return `${schemaName(schema.items)}[]`;
  if (schema.anyOf) return schema.anyOf.map(schemaName).join(" | ");
  return schema.type ?? "";
}

function fields(doc, schema) {
  const name = schema?.$ref ? schema.$ref.split("/").pop() : null;
  const found = name ? doc.components.schemas[name] : schema;
  if (!found?.properties) return null;
  const required = new Set(found.required ?? []);
  return el(
    "ul",
    { class: "fields" },
    ...Object.entries(found.properties).map(([key, value]) =>
      el(
        "li",
        {},
        el("code", { text: key }),
        ` ${schemaName(value)}${required.has(key) ? " (required)" : ""}`,
        value.description ? ` — ${value.description}` : "",
      ),
    ),
  );
}

function operation(doc, path, method, op) {
  const params = (op.parameters ?? []).map((p) =>
    el("li", {}, el("code", { text: p.name }), ` in ${p.in} ${schemaName(p.schema)}${p.required ? " (required)" : ""}`),
  );
  const body = op.requestBody?.content?.["application/json"]?.schema;
  const answers = Object.entries(op.responses ?? {}).map(([status, answer]) => {
    const schema = answer.content?.["application/json"]?.schema;
    return el("li", {}, el("strong", { text: status }), ` ${answer.description ?? ""} ${schemaName(schema)}`);
  });
  return el(
    "section",
    { class: "card opblock", dataset: { method, path } },
    el("h3", {}, el("span", { class: `method method-${method}`, text: method.toUpperCase() }), " ", el("code", { text: path })),
    op.summary ? el("p", { text: op.summary }) : null,
    op.description ? el("p", { class: "note", text: op.description }) : null,
    params.length ? el("div", {}, el("h4", { text: "Parameters" }), el("ul", {}, ...params)) : null,
    body ? el("div", {}, el("h4", { text: `Body: ${schemaName(body)}` }), fields(doc, body)) : null,
    el("div", {}, el("h4", { text: "Answers" }), el("ul", {}, ...answers)),
  );
}

async function start() {
  const main = document.getElementById("api");
  let doc;
  try {
    const answer = await fetch("/api/v1/openapi.json", { cache: "no-store" });
    doc = await answer.json();
  } catch {
    document.getElementById("api-status").textContent = "The OpenAPI document could not be read.";
    return;
  }
  const byTag = new Map();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? "other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push(operation(doc, path, method, op));
    }
  }
  main.replaceChildren(
    el("p", { class: "note", text: `${doc.info.title} ${doc.info.version} — ${doc.info.description ?? ""}` }),
    ...[...byTag].map(([tag, ops]) => el("section", { class: "tag" }, el("h2", { text: tag }), ...ops)),
  );
  main.removeAttribute("aria-busy");
}

start();
