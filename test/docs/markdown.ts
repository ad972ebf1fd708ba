/**
 * Just enough Markdown reading for the documentation tests: the headings of a page and their
 * anchors as GitHub computes them, its links, and its tables. Fenced code blocks and inline code are
 * skipped, as GitHub renders them without links or headings.
 */

/** A line of a page outside fenced code blocks, with its 1-based number. */
export interface ProseLine {
  readonly number: number;
  readonly text: string;
}

/** The lines of `markdown` that are not inside a fenced code block (``` or ~~~). */
export function proseLines(markdown: string): ProseLine[] {
  const result: ProseLine[] = [];
  let fence: string | undefined;
  markdown.split("\n").forEach((text, index) => {
    const opening = /^ {0,3}(`{3,}|~{3,})/.exec(text);
    if (fence === undefined && opening !== null) {
      fence = opening[1] as string;
      return;
    }
    if (fence !== undefined) {
      if (new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`).test(text)) fence = undefined;
      return;
    }
    result.push({ number: index + 1, text });
  });
  return result;
}

/** Removes inline code spans, so that what they hold is not read as links. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)[\s\S]*?\1/g, " ");
}

/** The text GitHub renders for a heading: links and images reduced to their text, markup removed. */
function renderedText(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/`/g, "")
    .replace(/\*\*|__/g, "")
    .trim();
}

/**
 * The anchor GitHub gives a heading: lower case, every character that is not a letter, a mark, a
 * digit, `_`, `-` or a space removed, spaces turned into `-` (the rule of github-slugger).
 */
export function slug(heading: string): string {
  return renderedText(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/**
 * Every anchor a page offers: one per heading (a repeated slug gets `-1`, `-2`, ... as on GitHub),
 * plus the `id` and `name` of HTML elements written in the page.
 */
export function anchors(markdown: string): Set<string> {
  const result = new Set<string>();
  const counts = new Map<string, number>();
  for (const { text } of proseLines(markdown)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (heading !== null) {
      const base = slug(heading[1] as string);
      const seen = counts.get(base) ?? 0;
      counts.set(base, seen + 1);
      result.add(seen === 0 ? base : `${base}-${seen}`);
    }
    for (const match of withoutCodeSpans(text).matchAll(/<[a-z]+\s[^>]*\b(?:id|name)="([^"]+)"/gi)) {
      result.add(match[1] as string);
    }
  }
  return result;
}

/** A link of a page: its target as written and the line it is on. */
export interface Link {
  readonly target: string;
  readonly line: number;
}

/**
 * The links and images of a page: inline ones (`[text](target "title")`, `![alt](target)`),
 * reference definitions (`[name]: target`) and `href`/`src` attributes of HTML written in the page.
 */
export function links(markdown: string): Link[] {
  const result: Link[] = [];
  for (const { number, text } of proseLines(markdown)) {
    const prose = withoutCodeSpans(text);
    for (const match of prose.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) {
      result.push({ target: (match[1] as string).replace(/^<|>$/g, ""), line: number });
    }
    const reference = /^ {0,3}\[[^\]]+\]:\s*(\S+)/.exec(prose);
    if (reference !== null) result.push({ target: reference[1] as string, line: number });
    for (const match of prose.matchAll(/\b(?:href|src)="([^"]+)"/g)) {
      result.push({ target: match[1] as string, line: number });
    }
  }
  return result;
}

/** A table of a page: its header cells and the cells of each row, trimmed, as written. */
export interface Table {
  readonly header: readonly string[];
  readonly rows: readonly (readonly string[])[];
  /** The line of the header. */
  readonly line: number;
  /** The text of the nearest heading above the table. */
  readonly section: string;
}

/** Splits a table row on the `|` that are not inside code spans nor escaped. */
function cells(row: string): string[] {
  const result: string[] = [];
  let current = "";
  let code = 0;
  const text = row.trim().replace(/^\|/, "").replace(/\|$/, "");
  for (let index = 0; index < text.length; index += 1) {
    const character = text[index] as string;
    if (character === "\\" && text[index + 1] === "|") {
      current += "|";
      index += 1;
    } else if (character === "`") {
      let run = 1;
      while (text[index + run] === "`") run += 1;
      code = code === 0 ? run : code === run ? 0 : code;
      current += "`".repeat(run);
      index += run - 1;
    } else if (character === "|" && code === 0) {
      result.push(current.trim());
      current = "";
    } else {
      current += character;
    }
  }
  result.push(current.trim());
  return result;
}

/** Every table of a page (a header row, a delimiter row, then rows starting with `|`). */
export function tables(markdown: string): Table[] {
  const lines = proseLines(markdown);
  const result: Table[] = [];
  let section = "";
  for (let index = 0; index < lines.length; index += 1) {
    const { text, number } = lines[index] as ProseLine;
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (heading !== null) section = renderedText(heading[1] as string);
    const delimiter = lines[index + 1];
    const isHeader =
      text.trim().startsWith("|") &&
      delimiter !== undefined &&
      delimiter.number === number + 1 &&
      /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/.test(delimiter.text);
    if (!isHeader) continue;
    const rows: string[][] = [];
    let next = index + 2;
    while (next < lines.length) {
      const row = lines[next] as ProseLine;
      if (row.number !== number + (next - index) || !row.text.trim().startsWith("|")) break;
      rows.push(cells(row.text));
      next += 1;
    }
    result.push({ header: cells(text), rows, line: number, section });
    index = next - 1;
  }
  return result;
}

/** The code spans of a table cell, without their backticks: `` `a` or `b` `` gives a and b. */
export function codeSpans(cell: string): string[] {
  return [...cell.matchAll(/(`+)([\s\S]*?)\1/g)].map((match) => (match[2] as string).trim());
}
