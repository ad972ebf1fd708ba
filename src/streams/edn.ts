/**
 * EDN values as read by edn-data (https://github.com/edn-format/edn), and the few operations the
 * streams module needs on them: parse one top-level value, tell keywords from strings, read maps,
 * and turn data into JSON for events.
 */
import { type EDNVal, toEDNString, toKeyword } from "edn-data";
import { EDNListParser } from "edn-data/dist/parse.js";

/** An EDN value in edn-data's representation (keywords `{key}`, maps `{map: [[k, v], ...]}`, ...). */
export type EdnValue = EDNVal;

/** Text that is not one well-formed EDN value. */
export class EdnError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EdnError";
  }
}

/**
 * Parses exactly one EDN value.
 * @throws EdnError for empty input, an unterminated form or several top-level values
 */
export function parseEdn(text: string): EdnValue {
  // edn-data's parser reads the items of a list: wrap the text in one, as its parseEDNString does,
  // but keep every item so that trailing values and unterminated forms can be refused.
  const parser = new EDNListParser();
  let values: unknown[];
  try {
    values = parser.next(`(${text}\n)`);
  } catch (error) {
    throw new EdnError(`invalid EDN: ${(error as Error).message}`);
  }
  if (!parser.isDone()) throw new EdnError("invalid EDN: unexpected end of input");
  if (values.length === 0) throw new EdnError("invalid EDN: no value");
  if (values.length > 1) throw new EdnError("invalid EDN: more than one top-level value");
  return values[0] as EdnValue;
}

/** Serialises a value to EDN text. */
export function toEdn(value: EdnValue): string {
  return toEDNString(value);
}

/** Whether `value` is a keyword; with `name`, whether it is that keyword. */
export function isKeyword(value: unknown, name?: string): value is { key: string } {
  return (
    typeof value === "object" &&
    value !== null &&
    "key" in value &&
    typeof (value as { key: unknown }).key === "string" &&
    Object.keys(value).length === 1 &&
    (name === undefined || (value as { key: string }).key === name)
  );
}

/** Makes the keyword `:name`. */
export function keyword(name: string): { key: string } {
  return toKeyword(name);
}

/** Whether `value` is an EDN map. */
export function isMap(value: unknown): value is { map: Array<[EdnValue, EdnValue]> } {
  return (
    typeof value === "object" && value !== null && "map" in value && Array.isArray((value as { map: unknown }).map)
  );
}

/** The items of a vector or a list, or `undefined` for anything else. */
export function sequenceItems(value: unknown): EdnValue[] | undefined {
  if (Array.isArray(value)) return value as EdnValue[];
  if (typeof value === "object" && value !== null && "list" in value) {
    const list = (value as { list: unknown }).list;
    if (Array.isArray(list)) return list as EdnValue[];
  }
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
  const record = value as unknown as Record<string, unknown>;
  if (Array.isArray(record.list)) return (record.list as EdnValue[]).map(ednToJson);
  if (Array.isArray(record.set)) return (record.set as EdnValue[]).map(ednToJson);
  if ("tag" in record && "val" in record) return ednToJson(record.val as EdnValue);
  if (typeof record.char === "string") return record.char;
  if (typeof record.sym === "string") return record.sym;
  return null;
}
