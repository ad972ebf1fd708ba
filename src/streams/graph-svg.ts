/**
 * Draws a stream's graph (graph.ts) as an SVG document: one box per action (its name, params, tap
 * point and `in`/`out` counts), one arrow per parent → child, laid out top-down by dagre
 * (`@dagrejs/dagre`, a layered graph layout in JavaScript: no Graphviz binary). dagre is loaded at
 * the first drawing, not when the server starts.
 *
 * Every text of a box comes from the stream's configuration, which is user text: it is
 * XML-escaped, and characters XML 1.0 does not allow (control characters, lone surrogates) are
 * replaced by U+FFFD, so the document is well-formed whatever the configuration holds.
 */
import type { EdgeLabel, GraphLabel, NodeLabel, Point } from "@dagrejs/dagre";
import type { GraphNode } from "./graph.js";

/** Characters of the text of a box at most; longer params are cut with `…`. */
const MAX_LINE = 60;
/** The monospace font's size and the width of one of its characters, in px (about 0.6 em). */
const FONT_SIZE = 12;
const CHAR_WIDTH = 7.3;
const LINE_HEIGHT = 16;
const PADDING = 8;

type Dagre = typeof import("@dagrejs/dagre");
let dagreModule: Promise<Dagre> | undefined;

/** dagre, imported once at the first call (a dynamic import keeps it out of start-up). */
function loadDagre(): Promise<Dagre> {
  dagreModule ??= import("@dagrejs/dagre");
  return dagreModule;
}

/** One box: its lines (the first is the action's name, in bold) and its size in px. */
interface Box {
  readonly lines: readonly string[];
  readonly width: number;
  readonly height: number;
}

/** Control characters but tab, newline and return; lone surrogates; U+FFFE and U+FFFF. */
const NOT_XML =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is replaced
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Text that XML 1.0 accepts as character data or in an attribute value: its `Char` production, with `&`, `<`, `>` and quotes escaped. */
export function xmlText(text: string): string {
  return text
    .replace(NOT_XML, "\uFFFD")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

/** `text` cut to {@link MAX_LINE} characters (code points, so that no surrogate pair is split). */
function cut(text: string): string {
  const points = Array.from(text);
  return points.length <= MAX_LINE ? text : `${points.slice(0, MAX_LINE - 1).join("")}…`;
}

function boxOf(node: GraphNode): Box {
  const lines = [node.action];
  if (node.params.length > 0) lines.push(cut(node.params.join(" ")));
  if (node["tap-point"] !== undefined) lines.push(cut(`tap-point ${node["tap-point"]}`));
  lines.push(`in ${node.in} · out ${node.out}`);
  const longest = Math.max(...lines.map((line) => Array.from(line).length));
  return {
    lines,
    width: Math.ceil(longest * CHAR_WIDTH + 2 * PADDING),
    height: lines.length * LINE_HEIGHT + 2 * PADDING,
  };
}

/**
 * The SVG document of a stream's graph.
 * @param title the document's title (the stream's name)
 */
export async function graphSvg(root: GraphNode, title: string): Promise<string> {
  const dagre = await loadDagre();
  const layout = new dagre.Graph<GraphLabel, NodeLabel, EdgeLabel>();
  layout.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 36, marginx: 12, marginy: 12 });
  layout.setDefaultEdgeLabel(() => ({}));
  const boxes = new Map<string, Box>();
  const add = (node: GraphNode, id: string): void => {
    const box = boxOf(node);
    boxes.set(id, box);
    layout.setNode(id, { width: box.width, height: box.height });
    node.children.forEach((child, index) => {
      const childId = `${id}.${index}`;
      add(child, childId);
      layout.setEdge(id, childId);
    });
  };
  add(root, "n0");
  dagre.layout(layout);

  const parts: string[] = [];
  for (const edge of layout.edges()) {
    const points: readonly Point[] = layout.edge(edge).points ?? [];
    const path = points.map((point, i) => `${i === 0 ? "M" : "L"}${point.x.toFixed(1)},${point.y.toFixed(1)}`);
    parts.push(`<path class="edge" d="${path.join(" ")}" marker-end="url(#arrow)"/>`);
  }
  for (const [id, box] of boxes) {
    const { x, y } = layout.node(id);
    const left = x - box.width / 2;
    const top = y - box.height / 2;
    parts.push(
      `<g class="action"><rect x="${left.toFixed(1)}" y="${top.toFixed(1)}" width="${box.width}" height="${box.height}" rx="4"/>`,
    );
    box.lines.forEach((line, i) => {
      const baseline = top + PADDING + (i + 1) * LINE_HEIGHT - 4;
      const weight = i === 0 ? ' font-weight="bold"' : "";
      parts.push(
        `<text x="${(left + PADDING).toFixed(1)}" y="${baseline.toFixed(1)}"${weight}>${xmlText(line)}</text>`,
      );
    });
    parts.push("</g>");
  }
  const size = layout.graph();
  const width = Math.ceil(size.width ?? 0);
  const height = Math.ceil(size.height ?? 0);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="monospace" font-size="${FONT_SIZE}">`,
    `<title>${xmlText(title)}</title>`,
    "<style>rect{fill:#f6f8fa;stroke:#444}.edge{fill:none;stroke:#666}</style>",
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto"><path d="M0,0L10,5L0,10z" fill="#666"/></marker></defs>',
    ...parts,
    "</svg>",
    "",
  ].join("\n");
}
