/**
 * The `file` output (docs/outputs.md): one JSON line per event, appended. The file is opened with
 * `O_APPEND` for each batch and closed after it, so that logrotate can move it away between two
 * batches (the next batch creates a new file), and concurrent writers never overwrite each other.
 * With `date-suffix: true`, `-YYYY-MM-DD` (the UTC date of each event's `time`, now without one) is
 * appended to the file name: one batch may then go to several files, one write each, in the order of
 * their first event. A write error (full disk, missing directory) is retried like a network error.
 */
import { writeFile } from "node:fs/promises";
import type { OutputDefinition } from "./config.js";
import { MAX_DATE_SECONDS } from "./dates.js";
import { type Encoded, SENT, type Transport, type Unit } from "./delivery.js";
import { type Event, timeOf } from "./event.js";

/** The definition of a `file` output. */
export type FileOutputDefinition = Extract<OutputDefinition, { type: "file" }>;

/** One append: the file and the lines (each ending with `\n`). */
export interface FileAppend {
  readonly path: string;
  readonly data: string;
}

const SECONDS_PER_DAY = 86_400;

/** Characters of `THH:MM:SS.sssZ`, the end of every `Date.prototype.toISOString()`. */
const TIME_OF_DAY_LENGTH = 14;

/**
 * The file of an event: `path`, or with `dateSuffix` `path-YYYY-MM-DD` from the event's time (UTC).
 * @param nowSeconds the date of events without a (usable) time
 * @param days a cache of suffixes by day number, shared over a batch
 */
function fileOf(path: string, event: Event, nowSeconds: number, days: Map<number, string>): string {
  let time = timeOf(event) ?? nowSeconds;
  if (Math.abs(time) > MAX_DATE_SECONDS) time = nowSeconds;
  const day = Math.floor(time / SECONDS_PER_DAY);
  let file = days.get(day);
  if (file === undefined) {
    // The date is what precedes `THH:MM:SS.sssZ`: a year past 9999 is written with a sign and six
    // digits (`+275760-09-13`), so a fixed 10-character prefix would cut it.
    file = `${path}-${new Date(day * SECONDS_PER_DAY * 1000).toISOString().slice(0, -TIME_OF_DAY_LENGTH)}`;
    days.set(day, file);
  }
  return file;
}

/**
 * A batch as appends: one per file, in the order of each file's first event, events in batch order.
 * @param nowSeconds Unix time in seconds, for events without a time
 */
export function encodeFileBatch(
  path: string,
  dateSuffix: boolean,
  batch: readonly Event[],
  nowSeconds: number,
): Encoded<FileAppend> {
  if (!dateSuffix) {
    let data = "";
    for (const event of batch) data += `${JSON.stringify(event)}\n`;
    return { units: [{ payload: { path, data }, events: batch.length }], rejected: 0 };
  }
  const days = new Map<number, string>();
  const files = new Map<string, { data: string; events: number }>();
  for (const event of batch) {
    const file = fileOf(path, event, nowSeconds, days);
    const line = `${JSON.stringify(event)}\n`;
    const entry = files.get(file);
    if (entry === undefined) files.set(file, { data: line, events: 1 });
    else {
      entry.data += line;
      entry.events += 1;
    }
  }
  const units: Unit<FileAppend>[] = [];
  for (const [file, { data, events }] of files) units.push({ payload: { path: file, data }, events });
  return { units, rejected: 0 };
}

/** The transport of a `file` output. */
export function fileTransport(definition: FileOutputDefinition): Transport<FileAppend> {
  const path = definition.path;
  const dateSuffix = definition["date-suffix"];
  return {
    encode: (batch) => encodeFileBatch(path, dateSuffix, batch, Date.now() / 1000),
    async send(append, signal) {
      // Flag `a` is O_WRONLY | O_CREAT | O_APPEND, opened and closed for this write only.
      await writeFile(append.path, append.data, { flag: "a", signal });
      return SENT;
    },
    close: async () => {},
  };
}
