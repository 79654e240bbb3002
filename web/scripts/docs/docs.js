// The docs UI at /docs: reads /openapi.json, writes each operation's
// x-rate-limit in words at the top of its description, and renders
// Swagger UI (swagger-ui-bundle.js, loaded before this module) with it.
// Try it out sends requests to this origin: the browser adds the session
// cookie of a dashboard login, and Authorize adds an API key.
import { rateLimitWords } from "./ratelimits.js";

const methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

// withRateLimits returns spec with every operation's limits in words at
// the top of its description (Markdown, as Swagger UI renders it).
export function withRateLimits(spec) {
  for (const item of Object.values(spec.paths ?? {})) {
    for (const m of methods) {
      const op = item[m];
      const words = op && rateLimitWords(op["x-rate-limit"]);
      if (words) op.description = `**${words}**` + (op.description ? `\n\n${op.description}` : "");
    }
  }
  return spec;
}

// accessible is a Swagger UI plugin that adds what its markup lacks for
// screen readers: a name for the Servers select (its own label is empty),
// and a heading between the title (h1) and the tags (h3).
function accessible() {
  const before = (el) => (Original, { React }) =>
    function Wrapped(props) {
      return React.createElement(React.Fragment, null, el(React), React.createElement(Original, props));
    };
  return {
    wrapComponents: {
      Servers: before((R) => R.createElement("label", { htmlFor: "servers", className: "docs-hidden" }, "Server")),
      operations: before((R) => R.createElement("h2", { className: "docs-hidden" }, "Operations by tag")),
    },
  };
}

async function main() {
  const root = document.getElementById("swagger-ui");
  let spec;
  try {
    const res = await fetch("/openapi.json", { headers: { Accept: "application/json" } });
    if (!res.ok) throw new Error(`GET /openapi.json answered ${res.status}`);
    spec = withRateLimits(await res.json());
  } catch (err) {
    root.innerHTML = "";
    const p = document.createElement("p");
    p.className = "docs-note docs-error";
    p.textContent = `The reference could not load the spec: ${err.message}`;
    root.append(p);
    return;
  }
  document.title = `${spec.info?.title ?? "API"} API reference`;
  window.ui = window.SwaggerUIBundle({
    spec,
    dom_id: "#swagger-ui",
    validatorUrl: null, // else Swagger UI sends the spec to validator.swagger.io
    deepLinking: true,
    showExtensions: true,
    displayRequestDuration: true,
    tryItOutEnabled: false,
    persistAuthorization: false,
    presets: [window.SwaggerUIBundle.presets.apis],
    plugins: [accessible],
    layout: "BaseLayout",
  });
}

main();
