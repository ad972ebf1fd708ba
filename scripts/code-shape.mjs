#!/usr/bin/env node
/**
 * Measures the shape of the TypeScript sources that CONTRIBUTING.md sets limits for: functions
 * longer than 120 lines, files longer than 600 lines, type assertions (`x as T`, `<T>x`; a const
 * assertion `as const` is not one), double assertions (`as unknown as T`) and comments citing a
 * document the repository does not hold (a `<name>.md` outside `docs/`, or a bare `§` not tied to
 * an RFC).
 *
 * `node scripts/code-shape.mjs [directory...]` prints every finding and the totals (default
 * `src`); test/code/shape.test.ts holds the limits.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/** Longest function and file, in lines, and the most type assertions `src/` may hold. */
export const LIMITS = { functionLines: 120, fileLines: 600, assertions: 60 };

const CITATION_DOCUMENT = /\b(?<!docs\/)(?<!\/)([a-z][a-z0-9-]*)\.md\b/gi;
const ALLOWED_DOCUMENTS = new Set(["readme", "contributing", "license", "changelog"]);
/** A `§` preceded by an RFC number (`RFC 9110 §15.5`, `RFC 6455, §5.2`) is a precise citation. */
const RFC_SECTION = /RFC ?\d+,? ?(section )?$/i;

function* typeScriptFiles(directory) {
  if (statSync(directory).isFile()) {
    yield directory;
    return;
  }
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) yield* typeScriptFiles(path);
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts")) yield path;
  }
}

function isConstAssertion(node) {
  return ts.isTypeReferenceNode(node.type) && node.type.typeName.getText() === "const";
}

function functionName(node) {
  if (node.name !== undefined) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) {
    return parent.name.getText();
  }
  if (ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText().slice(0, 40)})`;
  return "(anonymous)";
}

function citationsIn(text) {
  const found = [];
  for (const match of text.matchAll(CITATION_DOCUMENT)) {
    if (!ALLOWED_DOCUMENTS.has(match[1].toLowerCase())) found.push(match[0]);
  }
  let index = text.indexOf("§");
  while (index !== -1) {
    if (!RFC_SECTION.test(text.slice(Math.max(0, index - 24), index))) found.push(text.slice(index, index + 6).trim());
    index = text.indexOf("§", index + 1);
  }
  return found;
}

/**
 * The findings of one file: `{functions: [{name, line, lines}], lines, assertions: [{line, text}],
 * doubleAssertions: [...], citations: [{line, text}]}`.
 */
export function measureFile(path) {
  const text = readFileSync(path, "utf8");
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const lineOf = (position) => source.getLineAndCharacterOfPosition(position).line + 1;
  const result = {
    path,
    lines: text.split("\n").length,
    functions: [],
    assertions: [],
    doubleAssertions: [],
    citations: [],
  };
  const seenComments = new Set();
  const comments = (ranges) => {
    for (const range of ranges ?? []) {
      if (seenComments.has(range.pos)) continue;
      seenComments.add(range.pos);
      for (const citation of citationsIn(text.slice(range.pos, range.end))) {
        result.citations.push({ line: lineOf(range.pos), text: citation });
      }
    }
  };
  const visit = (node) => {
    // Every node and token (getChildren, not forEachChild), so that a comment before a closing
    // brace or after the last statement of a block is read too.
    comments(ts.getLeadingCommentRanges(text, node.getFullStart()));
    comments(ts.getTrailingCommentRanges(text, node.getEnd()));
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const lines = lineOf(node.getEnd()) - lineOf(node.getStart()) + 1;
      if (lines > LIMITS.functionLines)
        result.functions.push({ name: functionName(node), line: lineOf(node.getStart()), lines });
    }
    if ((ts.isAsExpression(node) && !isConstAssertion(node)) || ts.isTypeAssertionExpression(node)) {
      result.assertions.push({ line: lineOf(node.getStart()), text: node.getText().slice(0, 80) });
      const inner = ts.isParenthesizedExpression(node.expression) ? node.expression.expression : node.expression;
      if (ts.isAsExpression(inner) && inner.type.kind === ts.SyntaxKind.UnknownKeyword) {
        result.doubleAssertions.push({ line: lineOf(node.getStart()), text: node.getText().slice(0, 80) });
      }
    }
    for (const child of node.getChildren(source)) visit(child);
  };
  visit(source);
  return result;
}

/** The findings of every `.ts` file under `directories` (a file stands for itself). */
export function measure(directories) {
  return directories.flatMap((directory) => [...typeScriptFiles(directory)].map(measureFile));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const directories = process.argv.length > 2 ? process.argv.slice(2) : ["src"];
  const files = measure(directories);
  let assertions = 0;
  for (const file of files) {
    const name = relative(process.cwd(), file.path);
    if (file.lines > LIMITS.fileLines) console.log(`${name}: ${file.lines} lines (file)`);
    for (const f of file.functions) console.log(`${name}:${f.line}: function ${f.name}: ${f.lines} lines`);
    for (const a of file.doubleAssertions) console.log(`${name}:${a.line}: double assertion ${a.text}`);
    for (const c of file.citations) console.log(`${name}:${c.line}: citation ${c.text}`);
    assertions += file.assertions.length;
  }
  const count = (key) => files.reduce((sum, file) => sum + file[key].length, 0);
  console.log(
    `files over ${LIMITS.fileLines} lines: ${files.filter((f) => f.lines > LIMITS.fileLines).length}; ` +
      `functions over ${LIMITS.functionLines} lines: ${count("functions")}; type assertions: ${assertions} ` +
      `(limit ${LIMITS.assertions}); double assertions: ${count("doubleAssertions")}; citations: ${count("citations")}`,
  );
  if (process.env.VERBOSE) {
    for (const file of files)
      for (const a of file.assertions) console.log(`${relative(process.cwd(), file.path)}:${a.line}: ${a.text}`);
  }
}
