/**
 * InfluxDB line protocol (docs/inputs.md), as InfluxDB's line protocol reference defines it
 * (https://docs.influxdata.com/influxdb/v2/reference/syntax/line-protocol/):
 *
 *     <measurement>[,<tag_key>=<tag_value>...] <field_key>=<field_value>[,<field_key>=<field_value>...] [<timestamp>]
 *
 * - Lines are separated by `\n` (a `\r` before it is ignored); empty lines and lines starting with
 *   `#` (comments) are skipped. Sections are separated by unescaped spaces (a run of them is one).
 * - Escapes: in a measurement, `\,` and `\ `; in tag keys, tag values and field keys, `\,`, `\=` and
 *   `\ `; in a string field value, `\"` and `\\`. Elsewhere, `\\` is one backslash and a backslash
 *   before any other character is kept as it is (the reference's "literal backslash").
 * - Field values: floats (`1`, `1.0`, `-1.2e+78`), integers (`12i`, signed 64-bit), unsigned
 *   integers (`12u`), strings (`"…"`), booleans (`t`, `T`, `true`, `True`, `TRUE`, `f`, `F`,
 *   `false`, `False`, `FALSE`). `NaN` and `Inf` are not numbers of the protocol.
 * - The timestamp is an integer in the request's precision (default nanoseconds); without it the
 *   event takes the time of receipt.
 *
 * Each field of a line becomes one event: `service` = `<measurement>.<field key>`, every tag a
 * top-level string field (the `host` tag is the event's `host`), `time` in seconds. A number is the
 * `metric` (integers beyond 2^53 lose their last digits, as any JSON number would); a boolean is
 * `metric` 1 or 0; a string is the `description`, without metric. The fields the mapping sets
 * (`service`, `time`, `metric`, `description`) win over tags of the same name.
 */
import type { Event } from "./event.js";

/** A line the protocol refuses: its number (1 for the first) and why. */
export class LineProtocolError extends Error {
  constructor(
    readonly line: number,
    readonly reason: string,
  ) {
    super(`line ${line}: ${reason}`);
  }
}

/**
 * The unit of a timestamp: `digits` of it are fractions of a second (9 for nanoseconds), and a
 * whole unit is `multiplier` seconds (60 for minutes). The digits are split rather than the number
 * divided, so that `1556813561098000000` ns is 1556813561.098 s exactly as a double can hold it
 * (the integer itself is beyond 2^53).
 */
export interface TimeUnit {
  readonly digits: number;
  readonly multiplier: number;
}

/** The units by `precision` value (InfluxDB 1.x and 2.x names): `ns` (`n`), `us` (`u`), `ms`, `s`, `m`, `h`. */
export const PRECISIONS: Readonly<Record<string, TimeUnit>> = {
  ns: { digits: 9, multiplier: 1 },
  n: { digits: 9, multiplier: 1 },
  us: { digits: 6, multiplier: 1 },
  u: { digits: 6, multiplier: 1 },
  ms: { digits: 3, multiplier: 1 },
  s: { digits: 0, multiplier: 1 },
  m: { digits: 0, multiplier: 60 },
  h: { digits: 0, multiplier: 3600 },
};

/** A timestamp (an optional `-` and digits) in seconds. */
function secondsOf(timestamp: string, unit: TimeUnit): number {
  const negative = timestamp.charCodeAt(0) === 45;
  const digits = negative ? timestamp.slice(1) : timestamp;
  const cut = digits.length - unit.digits;
  const whole = cut > 0 ? Number(digits.slice(0, cut)) : 0;
  const fraction = unit.digits === 0 ? 0 : Number(digits.slice(Math.max(cut, 0))) / 10 ** unit.digits;
  const seconds = (whole + fraction) * unit.multiplier;
  return negative ? -seconds : seconds;
}

const SPACE = 32;
const COMMA = 44;
const EQUALS = 61;
const BACKSLASH = 92;
const QUOTE = 34;

/** Characters a backslash escapes in a measurement, and in keys and tag values. */
const MEASUREMENT_ESCAPES = ",\u0020";
const KEY_ESCAPES = ",=\u0020";

const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const INTEGER = /^[+-]?\d+i$/;
const UNSIGNED = /^\d+u$/;
const TIMESTAMP = /^-?\d+$/;
const BOOLEANS: Readonly<Record<string, number>> = {
  t: 1,
  T: 1,
  true: 1,
  True: 1,
  TRUE: 1,
  f: 0,
  F: 0,
  false: 0,
  False: 0,
  FALSE: 0,
};

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** Whether a line holds nothing but spaces and tabs. */
function isBlank(line: string): boolean {
  for (let i = 0; i < line.length; i++) {
    const code = line.charCodeAt(i);
    if (code !== SPACE && code !== 9) return false;
  }
  return true;
}

/** A field value as an event sees it: a number (the metric) or a string (the description). */
type FieldValue = number | string;

/** A cursor over one line; throws a bare message, which the reader turns into a LineProtocolError. */
class LineCursor {
  position = 0;
  constructor(readonly text: string) {}

  get done(): boolean {
    return this.position >= this.text.length;
  }

  at(code: number): boolean {
    return this.text.charCodeAt(this.position) === code;
  }

  /**
   * An escaped name or tag value, up to the first unescaped comma or space, or equals sign when
   * `equalsStops` (or the end). A backslash before a character of `escapes`, or before a
   * backslash, stands for that character; before another one it is kept.
   */
  name(escapes: string, equalsStops: boolean): string {
    const text = this.text;
    let result = "";
    let start = this.position;
    let i = start;
    for (; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code === BACKSLASH && i + 1 < text.length) {
        const next = text[i + 1] ?? "";
        if (next === "\\" || escapes.includes(next)) {
          result += text.slice(start, i) + next;
          i++;
          start = i + 1;
        }
        continue;
      }
      if (code === COMMA || code === SPACE || (equalsStops && code === EQUALS)) break;
    }
    this.position = i;
    return result + text.slice(start, i);
  }

  /** Skips a run of spaces; false when there was none. */
  spaces(): boolean {
    const start = this.position;
    while (this.at(SPACE)) this.position++;
    return this.position > start;
  }

  /** A quoted string field value, the cursor on its opening quote. */
  quoted(): string {
    const text = this.text;
    let result = "";
    let start = this.position + 1;
    for (let i = start; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code === BACKSLASH && (text[i + 1] === '"' || text[i + 1] === "\\")) {
        result += text.slice(start, i) + text[i + 1];
        i++;
        start = i + 1;
      } else if (code === QUOTE) {
        this.position = i + 1;
        return result + text.slice(start, i);
      }
    }
    throw new Error("unterminated string field value");
  }

  /** The unquoted text up to the next comma or space (a field value or a timestamp). */
  bare(): string {
    const start = this.position;
    while (!this.done && !this.at(COMMA) && !this.at(SPACE)) this.position++;
    return this.text.slice(start, this.position);
  }
}

/** The value of an unquoted field value. @throws Error naming the field when it is none of the protocol's types */
function bareValue(text: string, key: string): number {
  const boolean = BOOLEANS[text];
  if (boolean !== undefined) return boolean;
  if (FLOAT.test(text)) return Number(text);
  if (INTEGER.test(text) || UNSIGNED.test(text)) {
    // 15 digits or fewer are within int64 and exact as doubles: no BigInt needed.
    if (text.length <= 16) return Number(text.slice(0, -1));
    const digits = BigInt(text.slice(0, -1));
    const unsigned = text.endsWith("u");
    if (unsigned ? digits > UINT64_MAX : digits < INT64_MIN || digits > INT64_MAX) {
      throw new Error(`field ${JSON.stringify(key)}: ${text} is out of the ${unsigned ? "uint64" : "int64"} range`);
    }
    return Number(digits);
  }
  if (text === "") throw new Error(`field ${JSON.stringify(key)} has no value`);
  throw new Error(`field ${JSON.stringify(key)}: invalid value ${JSON.stringify(text.slice(0, 64))}`);
}

/** A parsed line: its measurement, tags, fields and timestamp (undefined when absent). */
interface Point {
  readonly measurement: string;
  readonly tags: [string, string][];
  readonly fields: [string, FieldValue][];
  readonly timestamp: string | undefined;
}

/** Parses one line (not empty, not a comment). @throws Error saying what is wrong */
function parsePoint(text: string): Point {
  const cursor = new LineCursor(text);
  const measurement = cursor.name(MEASUREMENT_ESCAPES, false);
  if (measurement === "") throw new Error("missing measurement");
  const tags: [string, string][] = [];
  while (cursor.at(COMMA)) {
    cursor.position++;
    const key = cursor.name(KEY_ESCAPES, true);
    if (key === "" || !cursor.at(EQUALS)) throw new Error("invalid tag: a tag is key=value");
    cursor.position++;
    const value = cursor.name(KEY_ESCAPES, false);
    if (value === "") throw new Error(`tag ${JSON.stringify(key)} has no value`);
    tags.push([key, value]);
  }
  if (!cursor.spaces() || cursor.done) throw new Error("missing fields");
  const fields: [string, FieldValue][] = [];
  for (;;) {
    const key = cursor.name(KEY_ESCAPES, true);
    if (key === "" || !cursor.at(EQUALS)) throw new Error("invalid field: a field is key=value");
    cursor.position++;
    fields.push([key, cursor.at(QUOTE) ? cursor.quoted() : bareValue(cursor.bare(), key)]);
    if (!cursor.at(COMMA)) break;
    cursor.position++;
  }
  if (cursor.done || (cursor.spaces() && cursor.done)) return { measurement, tags, fields, timestamp: undefined };
  if (cursor.position === 0 || text.charCodeAt(cursor.position - 1) !== SPACE) {
    throw new Error(`unexpected ${JSON.stringify(text[cursor.position])} after the fields`);
  }
  const timestamp = cursor.bare();
  cursor.spaces();
  if (!cursor.done || !TIMESTAMP.test(timestamp)) {
    throw new Error(`invalid timestamp ${JSON.stringify(text.slice(cursor.position - timestamp.length).slice(0, 64))}`);
  }
  return { measurement, tags, fields, timestamp };
}

/**
 * Reads a body of line protocol a number of lines at a time, so that a large body is read a slice
 * per turn of the event loop; malformed lines are skipped and counted, the first one kept.
 */
export class LineProtocolReader {
  readonly #text: string;
  readonly #unit: TimeUnit;
  readonly #now: number;
  #offset = 0;
  #line = 0;
  /** Malformed lines read so far. */
  malformed = 0;
  /** Lines whose events were emitted so far. */
  lines = 0;
  /** The first malformed line, if any. */
  firstError: LineProtocolError | undefined;

  /**
   * @param unit the unit of the timestamps (a value of {@link PRECISIONS})
   * @param now the time of receipt in seconds, for lines without a timestamp
   */
  constructor(text: string, unit: TimeUnit, now: number) {
    this.#text = text;
    this.#unit = unit;
    this.#now = now;
  }

  /**
   * Reads at most `limit` lines, emitting one event per field of each valid line.
   * @returns true once the whole body is read
   */
  read(limit: number, emit: (event: Event) => void): boolean {
    const text = this.#text;
    for (let count = 0; count < limit && this.#offset < text.length; count++) {
      let end = text.indexOf("\n", this.#offset);
      if (end < 0) end = text.length;
      let stop = end;
      if (stop > this.#offset && text.charCodeAt(stop - 1) === 13) stop--;
      const line = text.slice(this.#offset, stop);
      this.#offset = end + 1;
      this.#line++;
      if (isBlank(line) || line.charCodeAt(0) === 35) continue; // blank, or a # comment
      let point: Point;
      try {
        point = parsePoint(line);
      } catch (error) {
        this.malformed++;
        this.firstError ??= new LineProtocolError(this.#line, error instanceof Error ? error.message : String(error));
        continue;
      }
      this.lines++;
      this.#emit(point, emit);
    }
    return this.#offset >= text.length;
  }

  #emit(point: Point, emit: (event: Event) => void): void {
    const time = point.timestamp === undefined ? this.#now : secondsOf(point.timestamp, this.#unit);
    for (const [key, value] of point.fields) {
      const event: Event = {};
      for (const [tag, tagValue] of point.tags) event[tag] = tagValue;
      event.service = `${point.measurement}.${key}`;
      event.time = time;
      if (typeof value === "number") event.metric = value;
      else event.description = value;
      emit(event);
    }
  }
}
