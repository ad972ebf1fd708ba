/**
 * Durations, as written in configuration files and API bodies: one or more `<number><unit>` groups
 * such as `500ms`, `10s`, `1.5h` or `1h30m` (docs/configuration.md; the syntax of Go's
 * `time.ParseDuration` without sign). Units: `ns`, `us`, `µs`, `ms`, `s`, `m`, `h`. A bare number
 * is refused, except `0`. This is the only duration parser of the project.
 */

/** A parsed duration: the text exactly as given (it is echoed back) and its length. */
export interface Duration {
  /** The duration as it was written, e.g. `1h30m`. */
  readonly text: string;
  /** Length in milliseconds; fractional for sub-millisecond units. */
  readonly milliseconds: number;
}

/** The rule a duration must follow, worded for error messages. */
export const DURATION_RULE = "must be a duration such as 500ms, 10s or 1h30m";

const UNIT_MILLISECONDS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3, // U+00B5 MICRO SIGN
  μs: 1e-3, // U+03BC GREEK SMALL LETTER MU, accepted as Go does
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};

// Longer units first so that `ms` is not read as `m` followed by garbage.
const GROUP = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;

/** The text of a whole duration, as a regular expression source (for API descriptions). */
export const DURATION_PATTERN = `^(0|(${GROUP.source})+)$`;

/**
 * Parses a duration string.
 *
 * @returns the duration, or `undefined` when `text` is not a valid duration (empty, signed,
 *   spaced, a bare number other than `0`, an unknown unit).
 */
export function parseDuration(text: string): Duration | undefined {
  if (text === "0") return { text, milliseconds: 0 };
  if (text.length === 0) return undefined;
  let milliseconds = 0;
  GROUP.lastIndex = 0;
  while (GROUP.lastIndex < text.length) {
    const match = GROUP.exec(text);
    if (match === null) return undefined;
    milliseconds += Number(match[1]) * (UNIT_MILLISECONDS[match[2] ?? ""] ?? Number.NaN);
  }
  if (!Number.isFinite(milliseconds)) return undefined;
  return { text, milliseconds };
}
