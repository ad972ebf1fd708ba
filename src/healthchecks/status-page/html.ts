/**
 * The status page as HTML (docs/healthchecks.md): the complete first view rendered on the server,
 * so that it works without JavaScript, with its CSS inline and its refresh script from
 * `/status/status.js`; and the Content-Security-Policy that allows nothing else (no request leaves
 * for another origin, no inline script).
 */
import { escapeHtml, inlineStylePageCsp } from "../../platform/html.js";
import { formatUtc, h, type StatusData, type StatusMaintenance, statusView, type ViewNode } from "./view.js";

/** Where the page loads its refresh script from. */
export const STATUS_SCRIPT_PATH = "/status/status.js";

/**
 * The page's style. Colours: text at least 4.5:1 and day bars at least 3:1 against their
 * background (WCAG 2.2 1.4.3 and 1.4.11), in light and dark schemes; every colour repeats a text.
 */
export const STATUS_CSS = [
  ":root{color-scheme:light dark;--fg:#1f2328;--mu:#59636e;--bg:#fff;--cd:#f6f8fa;--ln:#d1d9e0;--ac:#0969da;",
  "--up:#1a7f37;--dn:#cf222e;--u0:#c8d1da;--u1:#cf222e;--u2:#bc4c00;--u3:#9a6700;--u4:#1a7f37}",
  "@media(prefers-color-scheme:dark){:root{--fg:#f0f6fc;--mu:#9198a1;--bg:#0d1117;--cd:#151b23;--ln:#3d444d;",
  "--ac:#4493f8;--up:#3fb950;--dn:#f85149;--u0:#3d444d;--u1:#f85149;--u2:#db6d28;--u3:#d29922;--u4:#3fb950}}",
  "body{margin:0;font:16px/1.5 system-ui,sans-serif;color:var(--fg);background:var(--bg)}",
  "header,main,footer{max-width:52rem;margin:0 auto;padding:0 1rem}",
  "h1{font-size:1.75rem;margin:1.5rem 0 .5rem}h2{font-size:1.25rem;margin:1.75rem 0 .5rem}h3{font-size:1.1rem;margin:0}",
  ".summary{font-weight:600;padding:.75rem 1rem;border:2px solid var(--mu);border-radius:.5rem}",
  ".summary.up{border-color:var(--up)}.summary.down{border-color:var(--dn)}",
  ".check{background:var(--cd);border:1px solid var(--ln);border-radius:.5rem;padding:.75rem 1rem;margin:.75rem 0}",
  ".head{display:flex;flex-wrap:wrap;justify-content:space-between;align-items:baseline;gap:.5rem}",
  ".state{margin:0;font-weight:600}.state.up{color:var(--up)}.state.down{color:var(--dn)}",
  ".state.unknown{color:var(--mu)}",
  ".desc,.since,.rt p,.scale,.updated,.notice{color:var(--mu);font-size:.875rem;margin:.25rem 0}",
  ".uptime{display:flex;flex-wrap:wrap;gap:.25rem 1.5rem;margin:.5rem 0;font-size:.875rem}",
  ".uptime div{display:flex;gap:.4rem}.uptime dt{color:var(--mu)}.uptime dd{margin:0;font-weight:600}",
  ".days ol{display:flex;gap:2px;list-style:none;margin:.5rem 0 0;padding:0;height:2rem}",
  ".days li{flex:1;border-radius:2px;background:var(--u4)}.days .u0{background:var(--u0)}.days .u1{background:var(--u1)}",
  ".days .u2{background:var(--u2)}.days .u3{background:var(--u3)}",
  ".scale{display:flex;justify-content:space-between;font-size:.75rem}",
  ".rt svg{display:block;width:100%;height:3rem;margin-top:.5rem;border-bottom:1px solid var(--ln)}",
  ".rt path{fill:none;stroke:var(--ac);stroke-width:2;stroke-linecap:round;stroke-linejoin:round;",
  "vector-effect:non-scaling-stroke}",
  ".notice{min-height:1.3em}footer{color:var(--mu);font-size:.875rem;padding:1rem}",
  ".incident{border-left:4px solid var(--dn);padding:.25rem 1rem;margin:.75rem 0}.incident.done{border-color:var(--up)}",
  ".istate{font-weight:600;margin:.25rem 0}.timeline{margin:.25rem 0;padding:0;list-style:none}",
  ".timeline p{margin:0 0 .5rem;white-space:pre-line}footer a{color:var(--ac)}",
  ".vh{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}",
].join("");

/** The Content-Security-Policy of the page and its data: its inline style allowed by its hash. */
export const STATUS_CSP = inlineStylePageCsp(STATUS_CSS, "'none'");

/** Serialises a view node as HTML, escaping every text and attribute value (platform/html.ts). */
export function renderHtml(node: ViewNode): string {
  if (typeof node === "string") return escapeHtml(node);
  let attributes = "";
  for (const [name, value] of Object.entries(node.attributes)) attributes += ` ${name}="${escapeHtml(value)}"`;
  return `<${node.tag}${attributes}>${node.children.map(renderHtml).join("")}</${node.tag}>`;
}

/**
 * When a window is, in words: `ongoing until 2026-05-10 04:00 UTC`, `2026-05-16 02:00 to 04:00 UTC`
 * (the end's day left out when it is the start's), `2026-05-16 23:00 UTC to 2026-05-17 01:00 UTC`.
 */
export function windowSpan(window: Pick<StatusMaintenance, "start" | "end" | "ongoing">): string {
  const end = formatUtc(window.end);
  if (window.ongoing) return `ongoing until ${end}`;
  const start = formatUtc(window.start);
  return start.slice(0, 10) === end.slice(0, 10) ? `${start.slice(0, -4)} to ${end.slice(11)}` : `${start} to ${end}`;
}

/**
 * The maintenance windows as a section of the header: text only, rendered here and left alone by
 * the refresh script (a window is announced ahead, so the 30 s refresh has nothing to add). Nothing
 * without windows.
 */
export function maintenanceHtml(windows: readonly StatusMaintenance[]): string {
  if (windows.length === 0) return "";
  const items = windows.map((window) =>
    h("li", {}, h("strong", {}, window.name), `: ${windowSpan(window)}, for ${window.checks.join(", ")}.`),
  );
  return renderHtml(h("section", { class: "maintenance" }, h("h2", {}, "Maintenance"), h("ul", {}, ...items)));
}

/** Options of {@link renderStatusPage}. */
export interface StatusPageOptions {
  /** How often the script refreshes the page, in milliseconds (written as `data-refresh-ms`). */
  readonly refreshMs: number;
  /** Whether the refresh script is there to load (it is built apart, into dist). */
  readonly script: boolean;
  /** The page's path (`/status`, `/status/ops`): its data and feed are below it. Default `/status`. */
  readonly path?: string;
}

/**
 * The whole page: a document in English with the title, a live region for what changes, the
 * maintenance windows, the main
 * landmark with the view of status-view.ts (which the script patches), and a footer. No inline
 * script and no event handler attribute; the only inline style is {@link STATUS_CSS}.
 *
 * Rendered once for any refresh interval: the returned function only writes the interval in.
 */
export function statusPageRenderer(
  data: StatusData,
  options: Pick<StatusPageOptions, "script" | "path">,
): (refreshMs: number) => string {
  const title = escapeHtml(data.title);
  const path = escapeHtml(options.path ?? "/status");
  const before = [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width,initial-scale=1">',
    `<title>${title}</title><link rel="icon" href="data:,"><style>${STATUS_CSS}</style>`,
    `<link rel="alternate" type="application/atom+xml" title="${title}" href="${path}/feed.atom">`,
    options.script ? `<script src="${STATUS_SCRIPT_PATH}" defer></script>` : "",
    `</head><body><header><h1>${title}</h1>`,
    data.description === "" ? "" : renderHtml(h("p", { class: "desc" }, data.description)),
    // Announces state changes and refresh failures; the script writes it (status.ts).
    '<p id="notice" class="notice" role="status"></p>',
    maintenanceHtml(data.maintenance),
    "</header>",
    `<main id="status" data-source="${path}/data" data-refresh-ms="`,
  ].join("");
  const after = [
    '">',
    statusView(data).map(renderHtml).join(""),
    `</main><footer>Times are in UTC. <a href="${path}/feed.atom">Atom feed</a> of incidents and maintenance.</footer>`,
    "</body></html>",
  ].join("");
  return (refreshMs) => `${before}${Math.round(refreshMs)}${after}`;
}

/** The whole page (see {@link statusPageRenderer}). */
export function renderStatusPage(data: StatusData, options: StatusPageOptions): string {
  return statusPageRenderer(data, options)(options.refreshMs);
}
