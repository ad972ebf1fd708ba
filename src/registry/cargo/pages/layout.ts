/**
 * The frame of the registry's web pages (docs/cargo.md, "Web pages"): the document, its inline
 * style, the optional script, and the Content-Security-Policy that allows nothing else (no request
 * leaves for another origin, no inline script, forms only to this origin).
 */
import { escapeHtml, inlineStylePageCsp } from "../../../platform/html.js";

/** Where the pages load their script from (only the sign-in of a private registry needs it). */
export const PAGES_SCRIPT_PATH = "/registry/registry.js";

/**
 * The pages' style. Colours keep text at least 4.5:1 against its background (WCAG 2.2 1.4.3) in
 * light and dark schemes.
 */
export const PAGES_CSS = [
  ":root{color-scheme:light dark;--fg:#1f2328;--mu:#59636e;--bg:#fff;--cd:#f6f8fa;--ln:#d1d9e0;--ac:#0969da;--wa:#9a6700}",
  "@media(prefers-color-scheme:dark){:root{--fg:#f0f6fc;--mu:#9198a1;--bg:#0d1117;--cd:#151b23;--ln:#3d444d;",
  "--ac:#4493f8;--wa:#d29922}}",
  "body{margin:0;font:16px/1.5 system-ui,sans-serif;color:var(--fg);background:var(--bg)}",
  "header,main,footer{max-width:60rem;margin:0 auto;padding:0 1rem}header{padding-top:1rem}",
  "a{color:var(--ac)}h1{font-size:1.75rem;margin:.5rem 0}h2{font-size:1.25rem;margin:1.5rem 0 .5rem}",
  "pre,code{font:.875rem/1.45 ui-monospace,monospace}pre{background:var(--cd);border:1px solid var(--ln);",
  "border-radius:.375rem;padding:.75rem;overflow-x:auto}",
  "table{border-collapse:collapse;width:100%;font-size:.9375rem}th,td{text-align:left;padding:.3rem .5rem;",
  "border-bottom:1px solid var(--ln);vertical-align:top}",
  "form.search{display:flex;gap:.5rem;margin:1rem 0}form.search input{flex:1;font:inherit;padding:.4rem}",
  "button,input[type=submit]{font:inherit;padding:.4rem .8rem}",
  ".crates{list-style:none;padding:0}.crates li{border-bottom:1px solid var(--ln);padding:.6rem 0}",
  ".muted,.note,footer{color:var(--mu)}.yanked{color:var(--wa);font-weight:600}",
  ".cols{display:grid;grid-template-columns:minmax(0,1fr) 18rem;gap:2rem}",
  "@media(max-width:48rem){.cols{grid-template-columns:1fr}}",
  "aside dl{margin:0}aside dt{color:var(--mu);font-size:.875rem;margin-top:.75rem}aside dd{margin:0;overflow-wrap:anywhere}",
  ".readme{overflow-wrap:break-word}.readme img{max-width:100%}nav.pages{display:flex;gap:1rem;margin:1rem 0}",
  "footer{font-size:.875rem;padding:2rem 1rem}label{display:block;margin:.5rem 0 .2rem}",
  ".vh{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}",
].join("");

/** The Content-Security-Policy of the page: its inline style allowed by its hash. */
export const PAGES_CSP = inlineStylePageCsp(PAGES_CSS, "'self'");

/** What {@link pageHtml} wraps. */
export interface PageFrame {
  /** The document's title, plain text. */
  readonly title: string;
  /** The content of `<main>`, HTML. */
  readonly main: string;
  /** Whether to load the script ({@link PAGES_SCRIPT_PATH}). */
  readonly script: boolean;
  /** Attributes of `<main>` besides its id, already escaped (`data-signin="required"`). */
  readonly mainAttributes?: string;
}

/**
 * A whole page: a document in English, a header linking the crate list, `<main id="registry">`
 * and a footer. No inline script and no event handler attribute; the only inline style is
 * {@link PAGES_CSS}.
 */
export function pageHtml(frame: PageFrame): string {
  return [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width,initial-scale=1">',
    `<title>${escapeHtml(frame.title)}</title><link rel="icon" href="data:,"><style>${PAGES_CSS}</style>`,
    frame.script ? `<script src="${PAGES_SCRIPT_PATH}" defer></script>` : "",
    '</head><body><header><a href="/registry">Crates</a></header>',
    `<main id="registry"${frame.mainAttributes ?? ""}>${frame.main}</main>`,
    "<footer>A Cargo registry served by Vigie. Dates are in UTC.</footer></body></html>",
  ].join("");
}
