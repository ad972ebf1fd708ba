/**
 * A validating JSON scanner (RFC 8259) for large request bodies: it checks the whole text without
 * building it, a slice of bytes per call, so that a body of many megabytes never holds the event
 * loop, and it measures the values its visitor asks for with an {@link EventMeter} while it reads
 * them. The caller then parses only the values within the bounds, one at a time (`JSON.parse` of
 * their text, which the scan found valid), and never a value of a million fields.
 *
 * The visitor sees every value down to `maxDepth` (the root is depth 0, a value of the root
 * container depth 1), with its path of keys and indexes, and may ask for a value to be measured as
 * one event: its fields (keys at every depth), strings (UTF-8 bytes after unescaping), other
 * values, and the items of its top-level `tags` array. Values inside a measured one are not
 * visited. A leading UTF-8 byte order mark is skipped, as Fastify's own JSON parser does.
 */
import type { EventMeter } from "./event-bounds.js";
import type { TurnClock } from "./slices.js";

/** A text that is not JSON; `position` is a byte offset. */
export class JsonScanError extends Error {
  constructor(
    readonly position: number,
    reason: string,
  ) {
    super(`${reason} at byte ${position}`);
    this.name = "JsonScanError";
  }
}

/** What a value is, from its first byte. */
export type JsonKind = "object" | "array" | "string" | "number" | "literal";

/** A key (in an object) or an index (in an array) on the path to a value. */
export type JsonPathItem = string | number;

/** What the scanner tells its caller. */
export interface JsonVisitor {
  /**
   * A value starts at `depth` (at most the scanner's `maxDepth`), at byte `start`.
   * @param path the keys and indexes from the root (the scanner's own array: read it, keep a copy)
   * @returns a meter to measure this value with as one event, or undefined
   */
  enter(depth: number, path: readonly JsonPathItem[], kind: JsonKind, start: number): EventMeter | undefined;
  /** A measured value ended: its text is the bytes `[start, end)`; the meter holds its counts. */
  leave(start: number, end: number, meter: EventMeter): void;
}

// What the scanner expects next, between tokens.
const VALUE = 0;
const VALUE_OR_CLOSE = 1; // after "["
const KEY_OR_CLOSE = 2; // after "{"
const KEY = 3; // after "," in an object
const COLON = 4;
const COMMA_OR_CLOSE = 5;
const END = 6;
// Inside a token that may span slices.
const IN_STRING = 7;
const IN_NUMBER = 8;

// States of the number automaton (RFC 8259 §6): which part is being read.
const N_SIGN = 0; // after "-"
const N_ZERO = 1; // a leading 0
const N_INT = 2;
const N_DOT = 3;
const N_FRACTION = 4;
const N_E = 5; // after "e" or "E"
const N_EXPONENT_SIGN = 6;
const N_EXPONENT = 7;

const OBJECT = 1;
const ARRAY = 2;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** The bytes a value of `tags` is named by. */
const TAGS = [0x74, 0x61, 0x67, 0x73];

/** Bytes of `\uXXXX` escapes once unescaped: a pair of surrogates is 4, a lone one 3 (U+FFFD). */
function escapedCodeUnitBytes(unit: number): number {
  return unit < 0x80 ? 1 : unit < 0x800 ? 2 : 3;
}

function isHex(byte: number): boolean {
  return (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66);
}

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/**
 * Scans one JSON text. Call {@link step} until it returns true; each call reads about `budget`
 * bytes (a token is never cut but for strings and numbers, which resume where they stopped).
 *
 * @example
 * const scanner = new JsonScanner(body, 2, visitor);
 * while (!scanner.step(256 * 1024)) await nextTurn();
 */
export class JsonScanner {
  readonly #text: Uint8Array;
  readonly #visitor: JsonVisitor;
  readonly #maxDepth: number;
  #position = 0;
  #expect = VALUE;
  /** Kind of each open container, outermost first. */
  readonly #containers: number[] = [];
  /** Items of each open container so far. */
  readonly #counts: number[] = [];
  /** The path to the current value, down to `maxDepth`. */
  readonly #path: JsonPathItem[] = [];
  // The value being measured: its meter, depth and first byte; -1 when none.
  #meter: EventMeter | undefined;
  #meterDepth = -1;
  #meterStart = 0;
  /** Depth of the measured value's `tags` array while it is open, else -1. */
  #tagsDepth = -1;
  /** Whether the last key read, at the measured value's top level, was `tags`. */
  #tagsKey = false;
  // The string being read: where its content started, its bytes once unescaped, whether a key.
  #stringStart = 0;
  #stringBytes = 0;
  #stringEscaped = false;
  #stringIsKey = false;
  #numberState = N_SIGN;

  /**
   * @param text the body (a leading byte order mark is skipped)
   * @param maxDepth the deepest values the visitor sees
   */
  constructor(text: Uint8Array, maxDepth: number, visitor: JsonVisitor) {
    this.#text = text;
    this.#maxDepth = maxDepth;
    this.#visitor = visitor;
    if (text[0] === 0xef && text[1] === 0xbb && text[2] === 0xbf) this.#position = 3;
  }

  /**
   * Reads about `budget` more bytes.
   * @returns true once the whole text is read and valid
   * @throws JsonScanError at the first byte that makes it invalid
   */
  step(budget: number): boolean {
    const text = this.#text;
    const length = text.length;
    const stop = Math.min(length, this.#position + budget);
    while (this.#position < stop) {
      if (this.#expect === IN_STRING) {
        this.#string(stop);
        continue;
      }
      if (this.#expect === IN_NUMBER) {
        this.#number(stop);
        continue;
      }
      const byte = text[this.#position];
      if (byte === undefined) break; // never: the position is below the text's length
      if (isWhitespace(byte)) {
        this.#position++;
        continue;
      }
      this.#token(byte);
    }
    if (this.#position < length) return false;
    if (this.#expect === IN_NUMBER) this.#endNumber();
    if (this.#expect !== END) throw new JsonScanError(length, "unexpected end of JSON");
    return true;
  }

  /** One token outside strings and numbers, starting with `byte`. */
  #token(byte: number): void {
    switch (this.#expect) {
      case VALUE:
        this.#value(byte);
        return;
      case VALUE_OR_CLOSE:
        if (byte === 0x5d) this.#close();
        else this.#value(byte);
        return;
      case KEY_OR_CLOSE:
        if (byte === 0x7d) this.#close();
        else this.#key(byte);
        return;
      case KEY:
        this.#key(byte);
        return;
      case COLON:
        if (byte !== 0x3a) throw this.#unexpected(byte);
        this.#position++;
        this.#expect = VALUE;
        return;
      case COMMA_OR_CLOSE:
        this.#commaOrClose(byte);
        return;
      default:
        throw this.#unexpected(byte);
    }
  }

  /** The error for `byte`, at the current position. */
  #unexpected(byte: number): JsonScanError {
    const shown = byte >= 0x20 && byte < 0x7f ? `"${String.fromCharCode(byte)}"` : `byte 0x${byte.toString(16)}`;
    return new JsonScanError(this.#position, `unexpected ${shown}`);
  }

  #key(byte: number): void {
    if (byte !== QUOTE) throw this.#unexpected(byte);
    this.#startString(true);
  }

  #commaOrClose(byte: number): void {
    const container = this.#containers[this.#containers.length - 1];
    if (byte === 0x2c) {
      this.#position++;
      this.#expect = container === OBJECT ? KEY : VALUE;
    } else if (byte === 0x7d && container === OBJECT) {
      this.#close();
    } else if (byte === 0x5d && container === ARRAY) {
      this.#close();
    } else {
      throw this.#unexpected(byte);
    }
  }

  /** A value starts with `byte`, at the current depth. */
  #value(byte: number): void {
    const kind: JsonKind | undefined =
      byte === 0x7b
        ? "object"
        : byte === 0x5b
          ? "array"
          : byte === QUOTE
            ? "string"
            : byte === 0x2d || (byte >= 0x30 && byte <= 0x39)
              ? "number"
              : byte === 0x74 || byte === 0x66 || byte === 0x6e
                ? "literal"
                : undefined;
    if (kind === undefined) throw this.#unexpected(byte);
    const depth = this.#containers.length;
    if (depth > 0) {
      const parent = depth - 1;
      const count = this.#counts[parent] ?? 0;
      if (this.#containers[parent] === ARRAY && depth <= this.#maxDepth) this.#path[parent] = count;
      this.#counts[parent] = count + 1;
    }
    const meter = this.#meter;
    if (meter !== undefined) {
      if (depth === this.#tagsDepth) meter.tag();
      if (kind !== "string") meter.value();
      if (kind === "array" && this.#tagsKey && depth === this.#meterDepth + 1) this.#tagsDepth = depth + 1;
    } else if (depth <= this.#maxDepth) {
      this.#path.length = depth;
      const asked = this.#visitor.enter(depth, this.#path, kind, this.#position);
      if (asked !== undefined) {
        this.#meter = asked;
        this.#meterDepth = depth;
        this.#meterStart = this.#position;
        asked.start();
        // start() counts the value as an object: anything else is counted as what it is.
        if (kind !== "object") asked.size = 0;
        if (kind !== "string" && kind !== "object") asked.value();
      }
    }
    switch (kind) {
      case "object":
      case "array":
        this.#containers.push(kind === "object" ? OBJECT : ARRAY);
        this.#counts.push(0);
        this.#position++;
        this.#expect = kind === "object" ? KEY_OR_CLOSE : VALUE_OR_CLOSE;
        return;
      case "string":
        this.#startString(false);
        return;
      case "number":
        this.#numberState = byte === 0x2d ? N_SIGN : byte === 0x30 ? N_ZERO : N_INT;
        this.#position++;
        this.#expect = IN_NUMBER;
        return;
      case "literal":
        this.#literal(byte);
        return;
    }
  }

  #literal(byte: number): void {
    const word = byte === 0x74 ? "true" : byte === 0x66 ? "false" : "null";
    const text = this.#text;
    for (let i = 0; i < word.length; i++) {
      if (text[this.#position + i] !== word.charCodeAt(i)) {
        throw new JsonScanError(this.#position + i, "invalid literal");
      }
    }
    this.#position += word.length;
    this.#ended();
  }

  /** The innermost container closes (its closing byte is at the current position). */
  #close(): void {
    this.#position++;
    this.#containers.pop();
    this.#counts.pop();
    if (this.#containers.length + 1 === this.#tagsDepth) this.#tagsDepth = -1;
    this.#ended();
  }

  /** A value ended (the position is after it): the visitor hears of a measured one. */
  #ended(): void {
    const depth = this.#containers.length;
    if (this.#meter !== undefined && depth === this.#meterDepth) {
      const meter = this.#meter;
      this.#meter = undefined;
      this.#meterDepth = -1;
      this.#tagsDepth = -1;
      this.#tagsKey = false;
      this.#visitor.leave(this.#meterStart, this.#position, meter);
    }
    this.#expect = depth === 0 ? END : COMMA_OR_CLOSE;
  }

  #startString(isKey: boolean): void {
    this.#position++;
    this.#stringStart = this.#position;
    this.#stringBytes = 0;
    this.#stringEscaped = false;
    this.#stringIsKey = isKey;
    this.#expect = IN_STRING;
  }

  /** Reads string content up to its closing quote, or up to `stop`. */
  #string(stop: number): void {
    const text = this.#text;
    let position = this.#position;
    let bytes = this.#stringBytes;
    while (position < stop) {
      const byte = text[position];
      if (byte === undefined) break; // never: the position is below the text's length
      if (byte === QUOTE) {
        this.#stringBytes = bytes;
        this.#position = position + 1;
        this.#endString(position);
        return;
      }
      if (byte === BACKSLASH) {
        this.#position = position;
        bytes += this.#escape();
        position = this.#position;
        this.#stringEscaped = true;
        continue;
      }
      if (byte < 0x20) throw new JsonScanError(position, "control character in a string");
      bytes++;
      position++;
    }
    this.#position = position;
    this.#stringBytes = bytes;
  }

  /** Reads an escape at the current position; returns its bytes once unescaped. */
  #escape(): number {
    const text = this.#text;
    const at = this.#position;
    const next = text[at + 1];
    switch (next) {
      case QUOTE:
      case BACKSLASH:
      case 0x2f: // /
      case 0x62: // b
      case 0x66: // f
      case 0x6e: // n
      case 0x72: // r
      case 0x74: // t
        this.#position = at + 2;
        return 1;
      case 0x75: {
        const unit = this.#unicodeEscape(at);
        this.#position = at + 6;
        // A high surrogate followed by a low one is one character of 4 bytes.
        if (unit >= 0xd800 && unit <= 0xdbff && text[at + 6] === BACKSLASH && text[at + 7] === 0x75) {
          const low = this.#unicodeEscape(at + 6);
          if (low >= 0xdc00 && low <= 0xdfff) {
            this.#position = at + 12;
            return 4;
          }
        }
        return escapedCodeUnitBytes(unit);
      }
      default:
        throw new JsonScanError(at, "invalid escape in a string");
    }
  }

  /** The code unit of the `\uXXXX` escape at `at`. */
  #unicodeEscape(at: number): number {
    const text = this.#text;
    let unit = 0;
    for (let i = at + 2; i < at + 6; i++) {
      const byte = text[i];
      if (byte === undefined || !isHex(byte)) throw new JsonScanError(at, "invalid \\u escape in a string");
      unit = unit * 16 + (byte <= 0x39 ? byte - 0x30 : (byte | 0x20) - 0x57);
    }
    return unit;
  }

  /** A string ended; its closing quote is at `quote`. */
  #endString(quote: number): void {
    const bytes = this.#stringBytes;
    const depth = this.#containers.length;
    const meter = this.#meter;
    if (this.#stringIsKey) {
      // A key read in the container opened at depth - 1 names the value at `depth`.
      if (meter !== undefined) {
        meter.field(bytes);
        if (depth === this.#meterDepth + 1) this.#tagsKey = this.#isTags(quote);
      } else if (depth <= this.#maxDepth) {
        this.#path[depth - 1] = this.#keyText(quote);
      }
      this.#expect = COLON;
      return;
    }
    if (meter !== undefined) meter.string(bytes);
    this.#ended();
  }

  #isTags(quote: number): boolean {
    const start = this.#stringStart;
    if (this.#stringEscaped) return this.#keyText(quote) === "tags";
    if (quote - start !== TAGS.length) return false;
    for (let i = 0; i < TAGS.length; i++) if (this.#text[start + i] !== TAGS[i]) return false;
    return true;
  }

  /** The key just read, unescaped. */
  #keyText(quote: number): string {
    const raw = Buffer.from(this.#text.buffer, this.#text.byteOffset, this.#text.byteLength);
    if (!this.#stringEscaped) return raw.toString("utf8", this.#stringStart, quote);
    return String(JSON.parse(raw.toString("utf8", this.#stringStart - 1, quote + 1)));
  }

  /** Reads number bytes up to the number's end, or up to `stop`. */
  #number(stop: number): void {
    const text = this.#text;
    let state = this.#numberState;
    let position = this.#position;
    while (position < stop) {
      const byte = text[position];
      if (byte === undefined) break; // never: the position is below the text's length
      const digit = byte >= 0x30 && byte <= 0x39;
      let next = -1;
      switch (state) {
        case N_SIGN:
          next = byte === 0x30 ? N_ZERO : digit ? N_INT : -1;
          break;
        case N_ZERO:
        case N_INT:
          next = digit && state === N_INT ? N_INT : byte === 0x2e ? N_DOT : byte === 0x65 || byte === 0x45 ? N_E : -2;
          break;
        case N_DOT:
          next = digit ? N_FRACTION : -1;
          break;
        case N_FRACTION:
          next = digit ? N_FRACTION : byte === 0x65 || byte === 0x45 ? N_E : -2;
          break;
        case N_E:
          next = byte === 0x2b || byte === 0x2d ? N_EXPONENT_SIGN : digit ? N_EXPONENT : -1;
          break;
        case N_EXPONENT_SIGN:
        case N_EXPONENT:
          next = digit ? N_EXPONENT : state === N_EXPONENT ? -2 : -1;
          break;
      }
      if (next === -1) throw new JsonScanError(position, "invalid number");
      if (next === -2) {
        // The byte is not part of the number: the number ended before it.
        this.#position = position;
        this.#numberState = state;
        this.#endNumber();
        return;
      }
      state = next;
      position++;
    }
    this.#position = position;
    this.#numberState = state;
  }

  #endNumber(): void {
    const state = this.#numberState;
    if (state !== N_ZERO && state !== N_INT && state !== N_FRACTION && state !== N_EXPONENT) {
      throw new JsonScanError(this.#position, "invalid number");
    }
    this.#ended();
  }
}

/** Bytes scanned between two looks at the clock, when scanning a slice per turn. */
const SCAN_STEP_BYTES = 8 * 1024;

/**
 * Scans the whole text a slice per turn of the event loop: the loop turns whenever the current
 * slice has taken its time on `clock` (which the caller may go on using for the work that follows).
 * @returns false when the text is not JSON
 */
export async function scanSliced(scanner: JsonScanner, clock: TurnClock): Promise<boolean> {
  try {
    while (!scanner.step(SCAN_STEP_BYTES)) if (clock.due()) await clock.turn();
  } catch (error) {
    if (error instanceof JsonScanError) return false;
    throw error;
  }
  return true;
}
