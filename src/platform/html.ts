/**
 * HTML escaping, for text that a page inserts as HTML: the author and content of comments and the
 * bodies quoted in healthcheck failure messages, text that Vigie does not control; and the
 * Content-Security-Policy of server-rendered pages.
 */
import { createHash } from "node:crypto";

const ENTITIES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

const SPECIAL = /[&<>"']/g;

/**
 * Replaces `&` `<` `>` `"` `'` by `&amp;` `&lt;` `&gt;` `&quot;` `&#39;`, which is enough for text
 * inserted as element content or inside a quoted attribute value. Nothing else changes: escaping the
 * result again escapes its ampersands again.
 */
export function escapeHtml(text: string): string {
  return text.replace(SPECIAL, (character) => ENTITIES[character] ?? character);
}

/**
 * The Content-Security-Policy of a server-rendered page whose one inline style sheet is `css`:
 * nothing by default; scripts of this origin, that style sheet by its hash (CSP Level 2 hash source),
 * requests to this origin, images of this origin or `data:` (the empty favicon), no base URL, no
 * framing; forms submit to this origin (`self`) or nowhere (`none`).
 */
export function inlineStylePageCsp(css: string, formAction: "'self'" | "'none'"): string {
  const styleHash = `'sha256-${createHash("sha256").update(css).digest("base64")}'`;
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src ${styleHash}`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    `form-action ${formAction}`,
    "frame-ancestors 'none'",
  ].join("; ");
}
