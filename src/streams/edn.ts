/**
 * EDN values as read by edn-data (https://github.com/edn-format/edn), and the few operations the
 * streams module needs on them: parse one top-level value strictly, tell keywords from strings, read
 * maps, and turn data into JSON for events.
 */
import { type EDNVal, parseEDNString, toEDNString, toKeyword } from "edn-data";
import { errorMessage } from "../platform/errors.js";

/** An EDN value in edn-data's representation (keywords `{key}`, maps `{map: [[k, v], ...]}`, ...). */
export type EdnValue = EDNVal;

/**
 * How deeply collections (lists, vectors, maps, sets) may nest in EDN the streams module reads:
 * stream configurations, where-conditions and search queries, test files. About 60 levels of
 * actions; deeper documents are refused before anything recurses into them.
 */
export const MAX_EDN_NESTING = 128;

/** Text that is not one well-formed EDN value; the message names the position when it can. */
export class EdnError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EdnError";
  }
}

/** `line 2, column 7` (both from 1) of the character at `index` of `text`. */
function position(text: string, index: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) {
    line += 1;
    lineStart = i + 1;
  }
  return `line ${line}, column ${index - lineStart + 1}`;
}

const CLOSERS: Readonly<Record<string, string>> = { "(": ")", "[": "]", "{": "}", "#{": "}" };
const WHITE_SPACE = new Set([" ", "\t", "\n", "\r", ","]);
const DELIMITERS = new Set(["(", ")", "[", "]", "{", "}", '"', ";"]);

/** One open collection, or the top level (`opener` empty). */
interface Frame {
  readonly opener: string;
  readonly start: number;
  /** Forms read so far, discarded ones (`#_`) excepted. */
  forms: number;
  /** Where the second top-level form starts (top level only). */
  secondForm?: number;
  /** Tags (`#inst`) and discards (`#_`) waiting for the form they apply to, innermost last. */
  readonly prefixes: Array<"tag" | "discard">;
}

/**
 * Checks the structure of EDN text where edn-data does not: every collection closed by its own
 * delimiter, no stray closing delimiter, an even number of forms in every map, exactly one
 * top-level form, nesting at most {@link MAX_EDN_NESTING} deep, no tag or `#_` without its form,
 * no character literal of a delimiter or white space (which edn-data cannot read). Iterative, so
 * any depth of input costs no stack.
 *
 * @throws EdnError naming the problem and its line and column
 */
export function checkEdnStructure(text: string): void {
  const fail = (problem: string, at: number): never => {
    throw new EdnError(`invalid EDN: ${problem} at ${position(text, at)}`);
  };
  const top: Frame = { opener: "", start: 0, forms: 0, prefixes: [] };
  const stack: Frame[] = [top];
  const current = () => stack[stack.length - 1] ?? top;
  /** A form that starts at `at` is complete: apply its prefixes, count it. */
  const complete = (at: number) => {
    const frame = current();
    while (frame.prefixes.length > 0) {
      if (frame.prefixes.pop() === "discard") return;
    }
    frame.forms += 1;
    if (frame === top && frame.forms === 2) frame.secondForm = at;
  };
  const tokenEnd = (from: number) => {
    let end = from;
    while (end < text.length && !WHITE_SPACE.has(text.charAt(end)) && !DELIMITERS.has(text.charAt(end))) end++;
    return end;
  };
  let i = 0;
  while (i < text.length) {
    const char = text.charAt(i);
    if (WHITE_SPACE.has(char)) {
      i++;
    } else if (char === ";") {
      const newline = text.indexOf("\n", i);
      i = newline === -1 ? text.length : newline + 1;
    } else if (char === '"') {
      let end = i + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      if (end >= text.length) fail("unterminated string", i);
      complete(i);
      i = end + 1;
    } else if (char === "(" || char === "[" || char === "{" || (char === "#" && text[i + 1] === "{")) {
      const opener = char === "#" ? "#{" : char;
      if (stack.length > MAX_EDN_NESTING) fail(`collections nested deeper than ${MAX_EDN_NESTING} levels`, i);
      stack.push({ opener, start: i, forms: 0, prefixes: [] });
      i += opener.length;
    } else if (char === ")" || char === "]" || char === "}") {
      const frame = current();
      if (frame === top) fail(`unexpected ${char} with no collection open`, i);
      if (CLOSERS[frame.opener] !== char) {
        fail(`unexpected ${char}: the ${frame.opener} at ${position(text, frame.start)} is not closed`, i);
      }
      if (frame.prefixes.length > 0) fail(`a tag or #_ has no form before ${char}`, i);
      if (frame.opener === "{" && frame.forms % 2 !== 0) {
        fail(`the map opened at ${position(text, frame.start)} has ${frame.forms} forms, not key-value pairs`, i);
      }
      stack.pop();
      complete(frame.start);
      i++;
    } else if (char === "#") {
      const end = tokenEnd(i + 1);
      if (text[i + 1] === "_") {
        current().prefixes.push("discard");
        i += 2;
      } else if (end === i + 1 && text[i + 1] !== '"') {
        // `#"..."` is a regular expression literal, a tag without a name for edn-data.
        fail('a # must start a tag, a set #{...}, a discard #_ or a regular expression #"..."', i);
      } else {
        current().prefixes.push("tag");
        i = end;
      }
    } else if (char === "\\") {
      const next = text[i + 1];
      if (next === undefined || WHITE_SPACE.has(next) || DELIMITERS.has(next)) {
        fail("a character literal of white space or a delimiter is not supported; write a string instead", i);
      }
      complete(i);
      i = tokenEnd(i + 2);
    } else {
      complete(i);
      i = tokenEnd(i + 1);
    }
  }
  if (stack.length > 1) {
    const frame = current();
    fail(`unexpected end of input: the ${frame.opener} at ${position(text, frame.start)} is not closed`, text.length);
  }
  if (top.prefixes.length > 0) fail("unexpected end of input after a tag or #_", text.length);
  if (top.forms === 0) throw new EdnError("invalid EDN: no value");
  if (top.secondForm !== undefined) fail("more than one top-level value: a second one starts", top.secondForm);
}

/**
 * Parses exactly one EDN value: {@link checkEdnStructure}, then edn-data.
 * @throws EdnError for empty input, unbalanced or mismatched delimiters, a map with an odd number of
 *   forms, several top-level values, too deep nesting, or what edn-data refuses (bad escapes)
 */
export function parseEdn(text: string): EdnValue {
  checkEdnStructure(text);
  try {
    // The line break ends a comment on the last line, which would otherwise swallow the closing
    // parenthesis edn-data wraps the text in. edn-data types its result `unknown`; it is an EDNVal.
    return parseEDNString(`${text}\n`) as EdnValue;
  } catch (error) {
    throw new EdnError(`invalid EDN: ${errorMessage(error)}`);
  }
}

/**
 * Serialises a value to EDN text that {@link parseEdn} reads back as the same value, regular
 * expression literals included (`#"..."`, which edn-data holds as a tag without a name and would
 * print as `# "..."`, text that parseEdn refuses).
 */
export function toEdn(value: EdnValue): string {
  return joinRegexLiterals(toEDNString(value));
}

/**
 * Turns every `# "` outside a string into `#"`: edn-data prints a tag, its name, a space and the
 * value, and only a regular expression literal has an empty name. Strings and character literals
 * (`\"`) are skipped over.
 */
function joinRegexLiterals(text: string): string {
  if (!text.includes('# "')) return text;
  let joined = "";
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === "\\") i++;
      else if (char === '"') inString = false;
    } else if (char === '"') {
      inString = true;
    } else if (char === "\\") {
      i++;
    } else if (char === "#" && text[i + 1] === " " && text[i + 2] === '"') {
      joined += text.slice(from, i + 1);
      from = i + 2;
    }
  }
  return joined + text.slice(from);
}

/** Whether `value` is a keyword; with `name`, whether it is that keyword. */
export function isKeyword(value: unknown, name?: string): value is { key: string } {
  return (
    typeof value === "object" &&
    value !== null &&
    "key" in value &&
    typeof value.key === "string" &&
    Object.keys(value).length === 1 &&
    (name === undefined || value.key === name)
  );
}

/** Makes the keyword `:name`. */
export function keyword(name: string): { key: string } {
  return toKeyword(name);
}

/** Whether `value` is an EDN map. */
export function isMap(value: unknown): value is { map: Array<[EdnValue, EdnValue]> } {
  return typeof value === "object" && value !== null && "map" in value && Array.isArray(value.map);
}

/** The items of a vector or a list, or `undefined` for anything else. */
export function sequenceItems(value: unknown): EdnValue[] | undefined {
  if (Array.isArray(value)) return value;
  if (typeof value === "object" && value !== null && "list" in value && Array.isArray(value.list)) return value.list;
  return undefined;
}

/** The value of keyword key `:name` in an EDN map (the last one wins, as in Clojure). */
export function mapGet(map: { map: Array<[EdnValue, EdnValue]> }, name: string): EdnValue | undefined {
  let found: EdnValue | undefined;
  for (const [key, value] of map.map) if (isKeyword(key, name)) found = value;
  return found;
}

/** Returns a copy of the map with keyword key `:name` set to `value`. */
export function mapSet(
  map: { map: Array<[EdnValue, EdnValue]> },
  name: string,
  value: EdnValue,
): { map: Array<[EdnValue, EdnValue]> } {
  const entries = map.map.filter(([key]) => !isKeyword(key, name));
  entries.push([keyword(name), value]);
  return { map: entries };
}

/** A keyword's name or a string, as a string; `undefined` for anything else. */
export function nameOf(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (isKeyword(value)) return value.key;
  return undefined;
}

/**
 * Turns EDN data into JSON data for events: maps become objects (keyword keys by name), vectors,
 * lists and sets arrays, keywords their name, big integers numbers, `#inst` an RFC 3339 string,
 * other tagged values their value.
 */
export function ednToJson(value: EdnValue): unknown {
  if (value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
    return value;
  }
  if (typeof value === "bigint") return Number(value);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(ednToJson);
  if (value instanceof Map) {
    const object: Record<string, unknown> = {};
    for (const [key, item] of value) object[String(nameOf(key) ?? key)] = ednToJson(item);
    return object;
  }
  if (value instanceof Set) return [...value].map(ednToJson);
  if (isKeyword(value)) return value.key;
  if (isMap(value)) {
    const object: Record<string, unknown> = {};
    for (const [key, item] of value.map) object[nameOf(key) ?? toEdn(key)] = ednToJson(item);
    return object;
  }
  // What is left: lists, sets, tagged values, characters and symbols.
  if ("list" in value && Array.isArray(value.list)) return value.list.map(ednToJson);
  if ("set" in value && Array.isArray(value.set)) return value.set.map(ednToJson);
  if ("tag" in value && "val" in value) return ednToJson(value.val);
  if ("char" in value && typeof value.char === "string") return value.char;
  if ("sym" in value && typeof value.sym === "string") return value.sym;
  return null;
}
