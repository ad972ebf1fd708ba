/**
 * Badges drawn as SVG (docs/healthchecks.md), in the flat style READMEs show: a grey label on the
 * left, the message on a coloured ground on the right, 20 pixels high. The image is self-contained:
 * no font file, no link, no script, nothing fetched (a README's image proxy and a browser opening
 * it directly show the same thing). Text widths are estimated from a table of Verdana's advance
 * widths at 11 px, and each text is drawn stretched to that width (`textLength`), so that a font
 * substituted by the viewer still fits its box.
 */
import { escapeHtml } from "../../platform/html.js";

/** The colours of badges, named as shields.io names them (its endpoint format takes the names). */
export const BADGE_COLORS = {
  brightgreen: "#4c1",
  green: "#97ca00",
  yellow: "#dfb317",
  orange: "#fe7d37",
  red: "#e05d44",
  lightgrey: "#9f9f9f",
} as const;

/** One of {@link BADGE_COLORS}. */
export type BadgeColor = keyof typeof BADGE_COLORS;

/** What a badge says: its label, its message and the message's colour, and the words for screen readers. */
export interface Badge {
  readonly label: string;
  readonly message: string;
  readonly color: BadgeColor;
  /** The badge in a sentence (`website status: up`): the SVG's `<title>` and `aria-label`. */
  readonly title: string;
}

/**
 * Verdana's advance widths of the printable ASCII characters, space (U+0020) to `~` (U+007E), in
 * units of 1/2048 em (the font's own units).
 */
// biome-ignore format: one row per 16 characters
const ASCII_WIDTHS: readonly number[] = [
  720, 823, 1047, 1823, 1303, 2215, 1487, 614, 909, 909, 1303, 1823, 720, 840, 720, 921, // space to /
  1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 909, 909, 1823, 1823, 1823, 1117, // 0 to ?
  2048, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 861, 921, 1413, 1141, 1730, 1532, 1612, // @ to O
  1240, 1612, 1425, 1399, 1241, 1503, 1401, 2032, 1405, 1238, 1399, 909, 921, 909, 1823, 1303, // P to _
  1303, 1229, 1300, 1067, 1300, 1219, 720, 1300, 1298, 563, 669, 1200, 563, 1992, 1298, 1255, // ` to o
  1300, 1300, 874, 1067, 807, 1298, 1200, 1675, 1200, 1200, 1067, 1300, 909, 1300, 1823, // p to ~
];

/** The font size the widths are computed for, in pixels. */
const FONT_SIZE_PX = 11;
/** Width of a character outside the table: about an average Latin letter, in 1/2048 em. */
const OTHER_WIDTH = 1300;
/** Width of a wide character (CJK, most emoji): a full em. */
const WIDE_WIDTH = 2048;
/** Space on each side of a text, in pixels. */
const PADDING_PX = 5;

/** Whether a code point is drawn a full em wide: Hangul, CJK, full-width forms and emoji. */
function isWide(codePoint: number): boolean {
  return (
    (codePoint >= 0x1100 && codePoint <= 0x115f) ||
    (codePoint >= 0x2e80 && codePoint <= 0xa4cf) ||
    (codePoint >= 0xac00 && codePoint <= 0xd7a3) ||
    (codePoint >= 0xf900 && codePoint <= 0xfaff) ||
    (codePoint >= 0xff00 && codePoint <= 0xff60) ||
    codePoint >= 0x1f000
  );
}

/** Whether a code point takes no room of its own: combining marks and zero-width characters. */
function isZeroWidth(codePoint: number): boolean {
  return (
    (codePoint >= 0x0300 && codePoint <= 0x036f) ||
    (codePoint >= 0x200b && codePoint <= 0x200f) ||
    (codePoint >= 0xfe00 && codePoint <= 0xfe0f)
  );
}

/**
 * The estimated width of `text` in Verdana at 11 px, in pixels (not rounded): the sum of each code
 * point's advance width, from the table for printable ASCII, an average letter's for other
 * characters, a full em for wide ones. No kerning.
 */
export function textWidth(text: string): number {
  let units = 0;
  for (const character of text) {
    const codePoint = character.codePointAt(0) ?? 0;
    const ascii = ASCII_WIDTHS[codePoint - 0x20];
    if (ascii !== undefined) units += ascii;
    else if (isZeroWidth(codePoint)) continue;
    else units += isWide(codePoint) ? WIDE_WIDTH : OTHER_WIDTH;
  }
  return (units * FONT_SIZE_PX) / 2048;
}

/**
 * Characters XML 1.0 does not allow in a document (its `Char` production): controls but tab and
 * newlines, lone surrogates, U+FFFE and U+FFFF.
 */
const NOT_XML =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters it removes
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Tab, line feed and carriage return, which a parser would turn into spaces in an attribute value. */
const WHITESPACE_REFERENCES: Readonly<Record<string, string>> = { "\t": "&#9;", "\n": "&#10;", "\r": "&#13;" };

/**
 * `text` as XML character data or a quoted attribute value: `& < > " '` escaped, tabs and line
 * breaks as character references (kept as they are in attribute values), and characters XML cannot
 * hold replaced by U+FFFD.
 */
export function escapeXml(text: string): string {
  return escapeHtml(text.replace(NOT_XML, "\ufffd")).replace(
    /[\t\n\r]/g,
    (character) => WHITESPACE_REFERENCES[character] ?? character,
  );
}

/** One text of the badge: centred at `centre` (pixels), stretched to `width` (pixels), with its shadow. */
function textElements(text: string, centre: number, width: number): string {
  // Drawn at ten times the size and scaled down, for sub-pixel positions in every renderer.
  const x = Math.round(centre * 10);
  const length = Math.round(width * 10);
  const escaped = escapeXml(text);
  return (
    `<text aria-hidden="true" x="${x}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)" textLength="${length}">${escaped}</text>` +
    `<text x="${x}" y="140" transform="scale(.1)" fill="#fff" textLength="${length}">${escaped}</text>`
  );
}

/**
 * The badge as a complete SVG document (UTF-8, no XML declaration needed), in the flat style:
 * `role="img"`, its {@link Badge.title} as `aria-label` and `<title>`, both texts escaped.
 */
export function renderBadgeSvg(badge: Badge): string {
  const labelText = textWidth(badge.label);
  const messageText = textWidth(badge.message);
  const labelWidth = Math.ceil(labelText) + 2 * PADDING_PX;
  const messageWidth = Math.ceil(messageText) + 2 * PADDING_PX;
  const width = labelWidth + messageWidth;
  const title = escapeXml(badge.title);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="20" role="img" aria-label="${title}">` +
    `<title>${title}</title>` +
    `<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>` +
    `<clipPath id="r"><rect width="${width}" height="20" rx="3" fill="#fff"/></clipPath>` +
    `<g clip-path="url(#r)"><rect width="${labelWidth}" height="20" fill="#555"/>` +
    `<rect x="${labelWidth}" width="${messageWidth}" height="20" fill="${BADGE_COLORS[badge.color]}"/>` +
    `<rect width="${width}" height="20" fill="url(#s)"/></g>` +
    `<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="110">` +
    textElements(badge.label, labelWidth / 2, labelText) +
    textElements(badge.message, labelWidth + messageWidth / 2, messageText) +
    "</g></svg>"
  );
}
