/**
 * Actions that reshape single events by their fields: extract, iterate-on,
 * sformat, to-string, from-json, to-base64, from-base64. A field is a keyword (`:host`) or a vector
 * of keywords naming a nested field (`[:attributes :host]`).
 *
 * Events are never modified in place (other branches hold the same objects): an action copies the
 * event and the maps on the path it changes, and forwards the event itself when nothing changed. An
 * event (or a list) an action cannot apply to is skipped and counted in
 * `stream_dropped_events_total{stream,action}`. The conversions (to-string, from-json, to-base64,
 * from-base64) leave a field the event lacks missing.
 */
import { isPlainObject } from "../../platform/validation.js";
import { type ActionDefinition, transforming, withChildren } from "../action.js";
import { CompileError } from "../compile-error.js";
import { type Event, type FieldPath, fieldReader, MAX_EVENT_NESTING, nestsDeeperThan, withField } from "../event.js";
import { expectCount, fieldParam, fieldsParam, soleOptionsParam } from "./params.js";

/**
 * `extract [field]`: emits the map stored at the field (a keyword or a nested path) as the new
 * event, unchanged. `{:foo {:time 1}}` with `[:foo]` gives `{:time 1}`. A map inside an event nests
 * less deeply than the event, so the new event is within MAX_EVENT_NESTING.
 *
 * Dropped: a missing field, or a value that is not a map (Mirabelle forwards any non-nil value);
 * a list.
 * @throws CompileError when the field is not a keyword or a vector of keywords
 */
export const extract: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "extract", "[field]");
    const read = fieldReader(fieldParam(params[0], path, "extract"));
    return transforming("extract", children, (event) => {
      const value = read(event);
      return isPlainObject(value) ? value : undefined;
    });
  },
};

/**
 * A copy of `event` without the field at `path` (from `index` on), copying only the maps on the
 * path. Parents left empty stay: the field alone is removed.
 */
function withoutLeaf(event: Event, path: FieldPath, index = 0): Event {
  const key = path[index];
  if (key === undefined) return event;
  const copy = { ...event };
  if (index === path.length - 1) {
    delete copy[key];
  } else {
    const inner = event[key];
    if (isPlainObject(inner)) copy[key] = withoutLeaf(inner, path, index + 1);
  }
  return copy;
}

/**
 * `iterate-on [{:source f :destination g}]`: when the source field holds an array, emits one event
 * per element, in order: a copy of the event without the source field, with the element at the
 * destination field (both keywords or nested paths). The source is removed before the destination
 * is set, so source = destination replaces the array by each element (Mirabelle loses it). An
 * empty array emits nothing.
 *
 * Dropped: an event whose source is missing or not an array; an element that would nest the event
 * deeper than MAX_EVENT_NESTING (only possible when the destination is deeper than the source);
 * a list.
 * @throws CompileError for a missing, unknown or malformed option
 */
export const iterateOn: ActionDefinition = {
  compile(params, children, path) {
    const options = soleOptionsParam(params, path, "iterate-on", "[{:source field :destination field}]", [
      "source",
      "destination",
    ]);
    const source = fieldParam(options.get("source"), path, "iterate-on", ":source");
    const destination = fieldParam(options.get("destination"), path, "iterate-on", ":destination");
    const read = fieldReader(source);
    // An element of the source array nests at most MAX − source.length − 1 levels, so the event
    // stays within the limit unless the destination is deeper than source.length + 1.
    const elementLimit = destination.length > source.length + 1 ? MAX_EVENT_NESTING - destination.length : undefined;
    return withChildren("iterate-on", children, (next, drop) => (value) => {
      if (Array.isArray(value)) {
        drop();
        return;
      }
      const elements = read(value);
      if (!Array.isArray(elements)) {
        drop();
        return;
      }
      if (elements.length === 0) return;
      const rest = withoutLeaf(value, source);
      for (const element of elements) {
        if (elementLimit !== undefined && nestsDeeperThan(element, elementLimit)) drop();
        else next(withField(rest, destination, element));
      }
    });
  },
};

/**
 * The text form of a field value: a string as it is, a number or a boolean by `String()`, null,
 * objects and arrays as JSON; a missing value gives "".
 */
function textOf(value: unknown): string {
  switch (typeof value) {
    case "string":
      return value;
    case "number":
    case "boolean":
      return String(value);
    case "undefined":
      return "";
    default:
      return JSON.stringify(value);
  }
}

/**
 * The literal pieces of an sformat template around its `%s` placeholders (one more piece than
 * placeholders), `%%` read as `%`.
 * @throws CompileError for any other `%` directive (Java's `%d`, `%.2f` …), which Vigie does not format
 */
function templatePieces(template: string, path: string): string[] {
  const pieces: string[] = [];
  let piece = "";
  for (let index = 0; index < template.length; index++) {
    const char = template[index];
    if (char !== "%") {
      piece += char;
      continue;
    }
    const directive = template[index + 1];
    if (directive === "s") {
      pieces.push(piece);
      piece = "";
    } else if (directive === "%") {
      piece += "%";
    } else {
      const found = directive === undefined ? "a % at the end" : `%${directive}`;
      throw new CompileError(
        path,
        `the template ${JSON.stringify(template)} of :sformat may hold only %s and %%, found ${found}`,
      );
    }
    index++;
  }
  pieces.push(piece);
  return pieces;
}

/**
 * `sformat ["template" target [f ...]]`: sets the target field (a keyword or a nested path) to the
 * template with each `%s` replaced, in order, by the text of the matching field: a string as it
 * is, a number or a boolean by `String()`, null, maps and arrays as JSON, a missing field as ""
 * (Mirabelle writes "null"). `%%` gives `%`. `["%s-cc-%s" :format-test [:host :service]]` on
 * `{:host "aa" :service "bb"}` sets `:format-test` to `"aa-cc-bb"`.
 *
 * Dropped: a list.
 * @throws CompileError when the template is not a string or holds another `%` directive, when the
 *   number of `%s` differs from the number of fields, or for a malformed target or field
 */
export const sformat: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 3, 3, path, "sformat", '["template with %s" target [field ...]]');
    const template = params[0];
    if (typeof template !== "string") throw new CompileError(path, "the template of :sformat must be a string");
    const [head = "", ...tail] = templatePieces(template, path);
    const target = fieldParam(params[1], path, "sformat", "the target");
    const fields = fieldsParam(params[2], path, "sformat");
    if (fields.length !== tail.length) {
      throw new CompileError(
        path,
        `the template ${JSON.stringify(template)} of :sformat has ${tail.length} %s for ${fields.length} field(s)`,
      );
    }
    const parts = fields.map((field, index) => ({ read: fieldReader(field), after: tail[index] ?? "" }));
    return transforming("sformat", children, (event) => {
      let text = head;
      for (const { read, after } of parts) text += textOf(read(event)) + after;
      return withField(event, target, text);
    });
  },
};

/** Sets a field on an event the caller owns (a fresh copy), copying the maps below its top level. */
function setOwnedField(owned: Event, head: string, rest: FieldPath, value: unknown): void {
  if (rest.length === 0) {
    owned[head] = value;
    return;
  }
  const inner = owned[head];
  owned[head] = withField(isPlainObject(inner) ? inner : {}, rest, value);
}

/**
 * Converts a field value, or gives `undefined` when it cannot (the event is then skipped).
 * @param depth the field's path length: where the value sits in the event, for nesting limits
 */
type Conversion = (value: unknown, depth: number) => unknown;

/**
 * An action `[[f ...]]` replacing the value of each present field by its conversion, in param
 * order; one failed conversion skips the event (counted).
 * @param missing what a listed field the event lacks becomes; `undefined` leaves it missing
 */
function fieldConversion(action: string, convert: Conversion, missing?: unknown): ActionDefinition {
  return {
    compile(params, children, path) {
      expectCount(params, 1, 1, path, action, "[[field ...]]");
      const fields = fieldsParam(params[0], path, action).map((field) => {
        const [head = "", ...rest] = field; // never empty: compileField refuses []
        return { depth: field.length, head, rest, read: fieldReader(field) };
      });
      return transforming(action, children, (event) => {
        // One copy of the event for all the fields, made at the first change.
        let copy: Event | undefined;
        for (const { depth, head, rest, read } of fields) {
          const value = read(copy ?? event);
          if (value === undefined && missing === undefined) continue;
          const converted = value === undefined ? missing : convert(value, depth);
          if (converted === undefined) return undefined;
          if (converted === value) continue;
          copy ??= { ...event };
          setOwnedField(copy, head, rest, converted);
        }
        return copy ?? event;
      });
    },
  };
}

/**
 * `to-string [[f ...]]`: replaces each field's value by its text: a string unchanged, a number or a
 * boolean by `String()`, null as "null", maps and arrays as JSON (Mirabelle prints EDN). A missing
 * field stays missing (Mirabelle sets ""). `[[:foo [:bar :a :b]]]` on `{:foo 1 :bar {:a {:b
 * true}}}` gives `{:foo "1" :bar {:a {:b "true"}}}`.
 *
 * Dropped: a list.
 * @throws CompileError when the param is not a vector of fields
 */
export const toStringAction = fieldConversion("to-string", textOf);

/**
 * `from-json [[f ...]]`: replaces each field's JSON text by the value it holds (any JSON value).
 * The param is a list of fields, where Mirabelle's takes one field or one path: its `[:foo :bar]`
 * (the path foo → bar) is written `[[[:foo :bar]]]` here. A listed field the event lacks becomes
 * present with `nil` (JSON `null`), as in Mirabelle v0.13: `[[:foo]]` on `{:host "aa"}` gives
 * `{:host "aa" :foo nil}`.
 *
 * Dropped (the whole event): a field holding something other than a string, invalid JSON, or a
 * value that would nest the event deeper than MAX_EVENT_NESTING; a list.
 * @throws CompileError when the param is not a vector of fields
 */
export const fromJson = fieldConversion(
  "from-json",
  (value, depth) => {
    if (typeof value !== "string") return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      return undefined;
    }
    // At `depth`, a value nesting v levels makes the event nest depth + v.
    return nestsDeeperThan(parsed, MAX_EVENT_NESTING - depth) ? undefined : parsed;
  },
  null,
);

/** A string holding a lone UTF-16 surrogate, which has no UTF-8 encoding. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * `to-base64 [[f ...]]`: replaces each string field by the standard base64 (RFC 4648 §4, padded) of
 * its UTF-8 bytes: `"aa"` gives `"YWE="`. A missing field stays missing.
 *
 * Dropped (the whole event): a field holding something other than a string, or a string with a lone
 * surrogate (not encodable as UTF-8, where Buffer would write U+FFFD); a list.
 * @throws CompileError when the param is not a vector of fields
 */
export const toBase64 = fieldConversion("to-base64", (value) =>
  typeof value === "string" && !LONE_SURROGATE.test(value) ? Buffer.from(value, "utf8").toString("base64") : undefined,
);

/** The standard base64 alphabet, padding only at the end (with the length a multiple of 4, RFC 4648 §4). */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Strict UTF-8: invalid bytes throw rather than become U+FFFD; a leading BOM is kept as text. */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * `from-base64 [[f ...]]`: replaces each field's standard base64 (RFC 4648 §4, padded) by the UTF-8
 * text it encodes: `"YWE="` gives `"aa"`. A missing field stays missing.
 *
 * Dropped (the whole event): a field holding something other than a string, a string that is not
 * padded standard base64 (Buffer would skip the bad characters), or bytes that are not UTF-8; a list.
 * @throws CompileError when the param is not a vector of fields
 */
export const fromBase64 = fieldConversion("from-base64", (value) => {
  if (typeof value !== "string" || value.length % 4 !== 0 || !BASE64.test(value)) return undefined;
  try {
    return UTF8.decode(Buffer.from(value, "base64"));
  } catch {
    return undefined;
  }
});
