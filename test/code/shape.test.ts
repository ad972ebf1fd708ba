/**
 * The limits CONTRIBUTING.md sets on the sources, measured by scripts/code-shape.mjs: no function
 * over 120 lines, no file over 600, fewer than 60 type assertions, no double assertion, no comment
 * citing a document the repository does not hold.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript script, without type declarations
import { LIMITS, measure } from "../../scripts/code-shape.mjs";

interface Finding {
  readonly line: number;
  readonly text?: string;
  readonly name?: string;
  readonly lines?: number;
}
interface FileShape {
  readonly path: string;
  readonly lines: number;
  readonly functions: Finding[];
  readonly assertions: Finding[];
  readonly doubleAssertions: Finding[];
  readonly citations: Finding[];
}

const files: FileShape[] = measure(["src"]);
const where = (file: FileShape, finding: Finding) =>
  `${relative(process.cwd(), file.path)}:${finding.line} ${finding.name ?? finding.text ?? ""}`;

describe("the shape of src/", () => {
  it("has no function over 120 lines and no file over 600", () => {
    expect(files.flatMap((file) => file.functions.map((f) => `${where(file, f)} (${f.lines} lines)`))).toEqual([]);
    expect(files.filter((file) => file.lines > LIMITS.fileLines).map((file) => file.path)).toEqual([]);
  });

  it("has fewer than 60 type assertions and no double assertion", () => {
    const assertions = files.flatMap((file) => file.assertions.map((a) => where(file, a)));
    expect(assertions.length, assertions.join("\n")).toBeLessThan(LIMITS.assertions);
    expect(files.flatMap((file) => file.doubleAssertions.map((a) => where(file, a)))).toEqual([]);
  });

  it("cites no specification file in its comments", () => {
    expect(files.flatMap((file) => file.citations.map((c) => where(file, c)))).toEqual([]);
  });

  it("throws catalogue errors, never an HTTP status", () => {
    // The deprecated HttpError took a literal status; every error now comes from the catalogue.
    const found = files.filter((file) => /\bHttpError\b/.test(readFileSync(file.path, "utf8")));
    expect(found.map((file) => file.path)).toEqual([]);
  });
});
