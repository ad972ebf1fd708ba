/**
 * The command blocks of a page that the documentation tests run (the convention is in
 * CONTRIBUTING.md, under Tests): a fenced block tagged `sh` or `bash` is run, unless the line right
 * above its fence is `<!-- doc-test: skip (reason) -->`. Every other block (`console` for a session
 * with its output, `text`, `yaml`, an untagged one...) is never run.
 */

/** A fenced `sh`/`bash` block of a page. */
export interface CommandBlock {
  /** The 1-based line of its opening fence. */
  readonly line: number;
  /** The commands, without the fences. */
  readonly text: string;
  /** The reason of a skip marker right above the fence, else undefined (the block runs). */
  readonly skip: string | undefined;
}

/** A skip marker, with its reason in parentheses. */
const SKIP = /^\s*<!--\s*doc-test:\s*skip\s*\((.+)\)\s*-->\s*$/;

/** Any doc-test marker, well-formed or not. */
const MARKER = /<!--\s*doc-test\b/;

/** The `sh` and `bash` blocks of a page, in order. */
export function commandBlocks(markdown: string): CommandBlock[] {
  const lines = markdown.split("\n");
  const result: CommandBlock[] = [];
  let fence: { marks: string; start: number; runnable: boolean } | undefined;
  lines.forEach((text, index) => {
    const match = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/.exec(text);
    if (fence === undefined) {
      if (match === null) return;
      fence = { marks: match[1] as string, start: index, runnable: /^(sh|bash)$/.test(match[2] as string) };
      return;
    }
    const closing = new RegExp(`^ {0,3}${fence.marks[0] === "`" ? "`" : "~"}{${fence.marks.length},}\\s*$`);
    if (!closing.test(text)) return;
    if (fence.runnable) {
      const skip = SKIP.exec(lines[fence.start - 1] ?? "");
      result.push({
        line: fence.start + 1,
        text: lines.slice(fence.start + 1, index).join("\n"),
        skip: skip === null ? undefined : (skip[1] as string).trim(),
      });
    }
    fence = undefined;
  });
  return result;
}

/**
 * The doc-test markers of a page that do not mark an `sh`/`bash` block with a reason (a marker
 * that is malformed, or left behind when its block changed tag or moved), as `line: text`.
 */
export function strayMarkers(markdown: string): string[] {
  const lines = markdown.split("\n");
  const marked = new Set(
    commandBlocks(markdown)
      .filter((block) => block.skip !== undefined)
      .map((block) => block.line - 2),
  );
  const result: string[] = [];
  lines.forEach((text, index) => {
    if (MARKER.test(text) && !marked.has(index)) result.push(`${index + 1}: ${text.trim()}`);
  });
  return result;
}
