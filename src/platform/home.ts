/**
 * `GET /`: what this server serves and how to turn on the rest, for a person who opens the address
 * in a browser (a small HTML page, no script) or a client asking for JSON. The same list is logged
 * at start-up, so a newcomer sees where everything is without reading the docs first.
 */
import type { FastifyInstance } from "fastify";
import type { VigieConfig } from "./config.js";
import { escapeHtml } from "./html.js";
import { type AnyModule, type ModuleLink, sectionOf } from "./module.js";

/** Links of the platform itself, always served. */
const PLATFORM_LINKS: readonly ModuleLink[] = [
  { title: "health", path: "/healthz" },
  { title: "Prometheus metrics", path: "/metrics" },
  { title: "API description (OpenAPI)", path: "/openapi.json" },
];

/**
 * Every link of the platform and of `modules`: a disabled module's links need `<name>.enabled: true`.
 * @returns served links first, in module order, then the ones that are off
 */
export function serverLinks(config: VigieConfig, modules: readonly AnyModule[]): ModuleLink[] {
  const links: ModuleLink[] = [...PLATFORM_LINKS];
  for (const module of modules) {
    const section = sectionOf(config, module);
    if (section === undefined || module.links === undefined) continue;
    for (const link of module.links(section)) {
      links.push(section.enabled ? link : { ...link, enableWith: `${module.name}.enabled: true` });
    }
  }
  return [...links.filter((link) => link.enableWith === undefined), ...links.filter((link) => link.enableWith)];
}

/** A link's address: paths under the public URL, other schemes as they are. */
function addressOf(link: ModuleLink, publicUrl: string): string {
  return link.path.startsWith("/") ? `${publicUrl.replace(/\/$/, "")}${link.path}` : link.path;
}

/**
 * Lines for the start-up log: `status page: http://…/status`, or `status page is off
 * (healthchecks.status-page.enabled: true)`.
 */
export function linkLines(links: readonly ModuleLink[], publicUrl: string): string[] {
  return links.map((link) =>
    link.enableWith === undefined
      ? `${link.title}: ${addressOf(link, publicUrl)}`
      : `${link.title} is off (${link.enableWith})`,
  );
}

function page(version: string, links: readonly ModuleLink[], publicUrl: string): string {
  const item = (link: ModuleLink) =>
    link.enableWith === undefined
      ? `<li><a href="${escapeHtml(addressOf(link, publicUrl))}">${escapeHtml(link.title)}</a></li>`
      : `<li>${escapeHtml(link.title)}: off, set <code>${escapeHtml(link.enableWith)}</code></li>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Vigie</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:2em auto;padding:0 1em}</style></head>
<body><h1>Vigie ${escapeHtml(version)}</h1><ul>
${links.map(item).join("\n")}
</ul></body></html>
`;
}

/**
 * Registers `GET /`: HTML when the client prefers it (a browser), else JSON
 * `{"vigie": version, "links": [{"title", "url"}], "off": [{"title", "enable-with"}]}`.
 */
export function homeRoute(app: FastifyInstance, version: string, links: readonly ModuleLink[], publicUrl: string) {
  const json = {
    vigie: version,
    links: links
      .filter((link) => link.enableWith === undefined)
      .map((link) => ({
        title: link.title,
        url: addressOf(link, publicUrl),
      })),
    off: links
      .filter((link) => link.enableWith !== undefined)
      .map((link) => ({
        title: link.title,
        "enable-with": link.enableWith,
      })),
  };
  const html = page(version, links, publicUrl);
  const schema = {
    type: "object",
    properties: {
      vigie: { type: "string" },
      links: {
        type: "array",
        items: { type: "object", properties: { title: { type: "string" }, url: { type: "string" } } },
      },
      off: {
        type: "array",
        items: { type: "object", properties: { title: { type: "string" }, "enable-with": { type: "string" } } },
      },
    },
    required: ["vigie", "links", "off"],
  };
  const openapi = {
    summary: "what this server serves, and how to turn on the rest",
    // The page for a browser (Accept: text/html), else JSON.
    success: {
      content: [
        { mediaType: "application/json", schema },
        { mediaType: "text/html", schema: { type: "string" } },
      ],
    },
    security: "none",
  } as const;
  app.get("/", { config: { openapi } }, async (request, reply) => {
    const accept = request.headers.accept ?? "";
    if (accept.includes("text/html")) return reply.type("text/html; charset=utf-8").send(html);
    return json;
  });
}
