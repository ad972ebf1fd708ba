/**
 * One line of Graphite's plaintext protocol (docs/inputs.md): `<path> <value> <timestamp>`, fields
 * separated by spaces or tabs (carbon splits on any whitespace), the value a decimal number and the
 * timestamp in seconds since the epoch (https://graphite.readthedocs.io/en/latest/feeding-carbon.html).
 *
 * The event: `service` = the path, `metric` = the value, `time` = the timestamp, `host` = the capture
 * of `host-pattern` in the path when it matched, else the client's address.
 */
import type { LinearRegex } from "../../platform/regex.js";
import type { Event } from "../event.js";

/** Whether a code unit separates the fields of a line (space or tab). */
function isBlank(code: number): boolean {
  return code === 32 || code === 9;
}

/** A number as Graphite writes one: decimal, optional sign, fraction and exponent; `nan`, `inf` refused. */
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function numberOf(text: string): number | undefined {
  if (!NUMBER.test(text)) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/**
 * The event of one line (its end of line removed; a trailing `\r` is ignored), or undefined when
 * the line is malformed: not three fields, a value or timestamp that is not a finite decimal
 * number, or a negative timestamp. A blank line is malformed too (the caller may skip it first).
 * @param peer the client's address, the host when `hostPattern` is absent or does not capture
 */
export function graphiteEvent(line: string, peer: string, hostPattern: LinearRegex | undefined): Event | undefined {
  const fields: string[] = [];
  let start = -1;
  let end = line.length;
  if (end > 0 && line.charCodeAt(end - 1) === 13) end--;
  for (let i = 0; i <= end; i++) {
    const blank = i === end || isBlank(line.charCodeAt(i));
    if (blank && start >= 0) {
      if (fields.length === 3) return undefined;
      fields.push(line.slice(start, i));
      start = -1;
    } else if (!blank && start < 0) start = i;
  }
  const [path, valueText, timeText] = fields;
  if (path === undefined || valueText === undefined || timeText === undefined) return undefined;
  const metric = numberOf(valueText);
  const time = numberOf(timeText);
  if (metric === undefined || time === undefined || time < 0) return undefined;
  const host = hostPattern?.firstGroup(path) || peer;
  return { host, service: path, metric, time };
}
