// The API's reference at /api/docs: Swagger UI (fastapi-swagger's files, served by this
// server under the page's CSP) drawn from the server's OpenAPI document, with « Try it out »
// against this server. Nothing is loaded from outside: no validator badge.

/* global SwaggerUIBundle */
window.ui = SwaggerUIBundle({
  url: "/api/v1/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
