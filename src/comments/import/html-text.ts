/**
 * HTML → plain text for imported comments: the widget shows text only, so the markup of a Disqus,
 * WordPress, Remark42 or Commento comment becomes the text a reader saw. Paragraphs and line breaks
 * become line breaks, list items start with `- `, a link keeps its URL in the text (`label
 * (https://…)`, or the URL alone when the label is the URL), every other tag is dropped, and
 * character references are decoded (numeric ones, and the named ones of HTML 4: Latin-1, the
 * typographic punctuation and a few symbols; an unknown name stays as written).
 *
 * A tolerant scanner, not a full HTML parser: comments hold a handful of inline tags, and whatever
 * it does not understand it drops or keeps as text, never as markup.
 */

/** The names of U+00A0 … U+00FF in HTML 4 (`&nbsp;` … `&yuml;`), in code-point order. */
const LATIN1 =
  "nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml".split(
    " ",
  );

/** Named references beyond Latin-1 that comments use. */
const OTHER_NAMES: Readonly<Record<string, number>> = {
  amp: 38,
  lt: 60,
  gt: 62,
  quot: 34,
  apos: 39,
  OElig: 0x152,
  oelig: 0x153,
  Scaron: 0x160,
  scaron: 0x161,
  Yuml: 0x178,
  ndash: 0x2013,
  mdash: 0x2014,
  lsquo: 0x2018,
  rsquo: 0x2019,
  sbquo: 0x201a,
  ldquo: 0x201c,
  rdquo: 0x201d,
  bdquo: 0x201e,
  dagger: 0x2020,
  Dagger: 0x2021,
  bull: 0x2022,
  hellip: 0x2026,
  permil: 0x2030,
  lsaquo: 0x2039,
  rsaquo: 0x203a,
  euro: 0x20ac,
  trade: 0x2122,
  larr: 0x2190,
  rarr: 0x2192,
  hearts: 0x2665,
  nbsp: 0xa0,
};

const NAMED: ReadonlyMap<string, string> = new Map([
  ...LATIN1.map((name, index): [string, string] => [name, String.fromCodePoint(0xa0 + index)]),
  ...Object.entries(OTHER_NAMES).map(([name, code]): [string, string] => [name, String.fromCodePoint(code)]),
]);

const REFERENCE = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z][A-Za-z0-9]{1,31}));?/g;

/**
 * Decodes character references: `&#233;`, `&#xE9;`, `&eacute;`. Code points that are not characters
 * (surrogates, beyond U+10FFFF, NUL) become U+FFFD, as HTML parsers do; unknown names stay as written.
 */
export function decodeCharacterReferences(text: string): string {
  return text.replace(REFERENCE, (whole, decimal?: string, hex?: string, name?: string) => {
    if (name !== undefined) return NAMED.get(name) ?? whole;
    const code = decimal !== undefined ? Number(decimal) : Number.parseInt(hex ?? "", 16);
    if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return "\uFFFD";
    return String.fromCodePoint(code);
  });
}

/** Tags after which the text goes on a new line, or a new paragraph. */
const LINE_TAGS = new Set(["br", "tr", "div"]);
const PARAGRAPH_TAGS = new Set(["p", "blockquote", "pre", "ul", "ol", "table", "h1", "h2", "h3", "h4", "h5", "h6"]);
/** Elements whose content is not text a reader saw. */
const HIDDEN_TAGS = new Set(["script", "style", "template"]);

const TAG = /<!--[\s\S]*?-->|<(\/?)([A-Za-z][A-Za-z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g;
const HREF = /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i;

/**
 * The text of an HTML fragment (see the file's description): tags out, references decoded, at most
 * one empty line between paragraphs, each line and the whole trimmed.
 *
 * @param keepLineBreaks true when the source's line breaks are the author's (WordPress stores the
 *   text as typed and adds `<p>` and `<br>` when showing it); false for rendered HTML, where a line
 *   break is a space
 */
export function htmlToText(html: string, keepLineBreaks = false): string {
  const breaks = keepLineBreaks ? "\n" : " ";
  let text = "";
  let hidden: string | undefined;
  const links: { start: number; href: string }[] = [];
  let last = 0;
  for (const match of html.matchAll(TAG)) {
    const index = match.index ?? 0;
    if (hidden === undefined) text += decodeCharacterReferences(html.slice(last, index).replace(/\r?\n|\r/g, breaks));
    last = index + match[0].length;
    const name = (match[2] ?? "").toLowerCase();
    const closing = match[1] === "/";
    if (name === "") continue; // a comment
    if (hidden !== undefined) {
      if (closing && name === hidden) hidden = undefined;
      continue;
    }
    if (HIDDEN_TAGS.has(name) && !closing) hidden = name;
    else if (name === "a" && !closing) {
      const href = HREF.exec(match[3] ?? "");
      links.push({ start: text.length, href: decodeCharacterReferences(href?.[1] ?? href?.[2] ?? href?.[3] ?? "") });
    } else if (name === "a") {
      const link = links.pop();
      if (link !== undefined) text += linkSuffix(text.slice(link.start), link.href);
    } else if (name === "li") text += closing ? "" : "\n- ";
    else if (LINE_TAGS.has(name)) text += "\n";
    else if (PARAGRAPH_TAGS.has(name)) text += "\n\n";
  }
  if (hidden === undefined) text += decodeCharacterReferences(html.slice(last).replace(/\r?\n|\r/g, breaks));
  return text
    .split("\n")
    .map((line) => line.trim())
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/** What follows a link's label: ` (<url>)`, nothing when the label is the URL, the URL when there is no label. */
function linkSuffix(label: string, href: string): string {
  const url = href.trim();
  if (!/^(?:https?:|mailto:)/i.test(url)) return "";
  const shown = label.trim();
  if (shown === "") return url;
  return shown === url || shown === url.replace(/^mailto:/i, "") ? "" : ` (${url})`;
}
