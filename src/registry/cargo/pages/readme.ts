/**
 * A crate's README as HTML for its page (docs/cargo.md, "Web pages"), with markdown-it
 * (CommonMark plus tables and strikethrough). What a publisher writes is never trusted:
 *
 * - raw HTML is off (`html: false`): `<script>`, `<img onerror>` and the like come out as text;
 * - a link or image whose URL has a scheme other than `http`, `https` or `mailto` (`javascript:`,
 *   `data:`, `vbscript:`, `file:` …, whatever its case or the blanks inside it) is not a link: it
 *   is shown as the Markdown text it was written as;
 * - a relative link (`LICENSE`, `#usage`) points to nothing on this page: it keeps its text, without
 *   `href`;
 * - every link gets `rel="nofollow ugc noopener"` (the publisher's content, RFC-less convention of
 *   search engines) and images become links to them, so the page makes no request elsewhere;
 * - headings move down two levels (the README's `#` is an `<h3>`: the page's `<h1>` is the crate,
 *   its `<h2>` the README section).
 */
import type MarkdownIt from "markdown-it";
import { lazily, lazyLibrary } from "../../../platform/lazy.js";

/** markdown-it, loaded on the first README rendered: most servers never render one. */
const markdownIt = lazyLibrary<typeof MarkdownIt>("markdown-it");

/** The `rel` of every link of a README. */
export const README_LINK_REL = "nofollow ugc noopener";

/** The most of a README rendered, in UTF-16 code units: the rest is left out with a note. */
export const MAX_RENDERED_README = 256 * 1024;

/** URL schemes a README link may have; anything else with a scheme is no link. */
const SAFE_SCHEME = /^(?:https?|mailto):/i;

/** A scheme at the start of a URL (RFC 3986 §3.1), once blanks and control characters are gone. */
const ANY_SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/**
 * Whether markdown-it may make a link of `url`: no scheme (relative), or a safe one. Browsers drop
 * tabs, newlines and leading blanks from URLs (WHATWG URL), so `java\tscript:` is checked without them.
 */
export function isAllowedLink(url: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const bare = url.replace(/[\u0000-\u0020\u007f]/g, "");
  return SAFE_SCHEME.test(bare) || !ANY_SCHEME.test(bare);
}

/** Builds the one markdown-it instance with the rules of this file. */
function readmeRenderer(): MarkdownIt {
  const md = new (markdownIt())("default", { html: false, linkify: true, typographer: false });
  md.validateLink = isAllowedLink;
  const rules = md.renderer.rules;

  rules.link_open = (tokens, index, options, _env, self) => {
    const token = tokens[index];
    if (token === undefined) return "";
    const href = token.attrGet("href") ?? "";
    // A relative link would point into this site, not into the crate's repository: text only.
    token.attrs = SAFE_SCHEME.test(href) ? [["href", href]] : [];
    if (token.attrs.length > 0) token.attrSet("rel", README_LINK_REL);
    return self.renderToken(tokens, index, options);
  };

  rules.image = (tokens, index, options, env, self) => {
    const token = tokens[index];
    if (token === undefined) return "";
    const src = token.attrGet("src") ?? "";
    const alt = self.renderInlineAsText(token.children ?? [], options, env) || "image";
    const text = md.utils.escapeHtml(`[image: ${alt}]`);
    if (!SAFE_SCHEME.test(src)) return text;
    return `<a href="${md.utils.escapeHtml(src)}" rel="${README_LINK_REL}">${text}</a>`;
  };

  const shift = (tokens: { tag: string }[], index: number) => {
    const token = tokens[index];
    if (token !== undefined) token.tag = `h${Math.min(6, Number(token.tag.slice(1)) + 2)}`;
  };
  rules.heading_open = (tokens, index, options, _env, self) => {
    shift(tokens, index);
    return self.renderToken(tokens, index, options);
  };
  rules.heading_close = (tokens, index, options, _env, self) => {
    shift(tokens, index);
    return self.renderToken(tokens, index, options);
  };
  return md;
}

const renderer = lazily(readmeRenderer);

/**
 * Renders a README written in Markdown as inert HTML (see the rules above). A README longer than
 * {@link MAX_RENDERED_README} is cut there, with a note saying so.
 *
 * @param markdown the README as published (cargo sends the file's text)
 * @returns HTML to insert as the content of an element
 */
export function renderReadme(markdown: string): string {
  if (markdown.length <= MAX_RENDERED_README) return renderer().render(markdown);
  const shown = renderer().render(markdown.slice(0, MAX_RENDERED_README));
  return `${shown}<p class="note">The README is longer than ${MAX_RENDERED_README / 1024} KiB: the rest is not shown.</p>`;
}
