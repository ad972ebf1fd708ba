/**
 * The moderation page's HTML: a shell the server renders (title, heading, a
 * `<main>` its script fills, a `<noscript>` for browsers without JavaScript), its script and style
 * sheet from this origin, and the Content-Security-Policy that allows nothing else: no inline
 * script or style, requests to this origin only, no framing. The page holds no data; the API calls
 * its script makes need a token.
 */

/** Where the page is served. */
export const ADMIN_PAGE_PATH = "/comments/admin";
/** Where the page loads its script from (built from src/comments/browser/admin.ts). */
export const ADMIN_SCRIPT_PATH = "/comments/admin.js";
/** Where the page loads its style sheet from (the CSS that admin.ts imports, emitted by esbuild). */
export const ADMIN_STYLE_PATH = "/comments/admin.css";
/** The `id` of the `<main>` element the script fills. */
export const ADMIN_MAIN_ID = "moderation";

/**
 * The Content-Security-Policy of the page: nothing by default; scripts and style sheets of this
 * origin only (no inline ones, no `style` attribute in markup; the CSSOM stays usable), requests
 * (the admin and registry APIs) and images to this origin or `data:` (the empty favicon), no base
 * URL, no form submission (the script handles its forms' `submit` events), no framing
 * (clickjacking of the approve and delete buttons).
 */
export const ADMIN_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** What the page may link to: the built files that exist. */
export interface AdminPageOptions {
  /** Whether admin.js is built; without it the page says so instead of waiting for a script. */
  readonly script: boolean;
  /** Whether admin.css is built; without it the page has no `<link rel="stylesheet">`. */
  readonly style: boolean;
}

/**
 * The page's HTML, the same for every request (nothing in it depends on the request or the
 * configuration, so nothing needs escaping).
 */
export function renderAdminPage(options: AdminPageOptions): string {
  const head = [
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    "<title>Comment moderation · Vigie</title>",
    // An empty icon, so that the browser does not ask for /favicon.ico.
    '<link rel="icon" href="data:,">',
    ...(options.style ? [`<link rel="stylesheet" href="${ADMIN_STYLE_PATH}">`] : []),
    ...(options.script ? [`<script src="${ADMIN_SCRIPT_PATH}" defer></script>`] : []),
  ];
  const content = options.script
    ? "<noscript><p>This page needs JavaScript: enable it to moderate comments.</p></noscript>"
    : "<p>The moderation page's script is not built: run <code>npm run build</code>.</p>";
  return [
    "<!doctype html>",
    '<html lang="en">',
    `<head>${head.join("")}</head>`,
    "<body>",
    "<header><h1>Comment moderation</h1></header>",
    `<main id="${ADMIN_MAIN_ID}">${content}</main>`,
    "</body>",
    "</html>",
    "",
  ].join("\n");
}
