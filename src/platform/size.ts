/**
 * Byte sizes in configuration files: a non-negative integer number of bytes, or an integer followed
 * by `B`, `KiB`, `MiB` or `GiB` (binary multiples, IEC 80000-13), e.g. `64KiB`, `1MiB`.
 */

/** The rule a size must follow, worded for error messages. */
export const SIZE_RULE = "must be a size such as 65536, 64KiB or 1MiB";

const MULTIPLIERS: Readonly<Record<string, number>> = {
  "": 1,
  B: 1,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
};

const SIZE = /^(\d+)(B|KiB|MiB|GiB)?$/;

/**
 * Parses a size.
 *
 * @param value a number of bytes (a non-negative safe integer) or a string such as `1MiB`
 * @returns the size in bytes, or `undefined` when the value is not a valid size
 */
export function parseSize(value: unknown): number | undefined {
  if (typeof value === "number") {
    return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  }
  if (typeof value !== "string") return undefined;
  const match = SIZE.exec(value);
  if (match === null) return undefined;
  const bytes = Number(match[1]) * (MULTIPLIERS[match[2] ?? ""] ?? Number.NaN);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}
