/**
 * What outputs receive: events (JSON objects with a free schema, docs/outputs.md; times are Unix
 * seconds), one at a time or as a list, and the few fields every output type reads.
 */
import type { SinkEvent } from "../events.js";

/** An event as outputs see it. */
export type Event = SinkEvent;

/** One event or a list of them, as a stream hands them to an output. */
export type Flow = Event | Event[];

/** Seconds an event stays valid when it has no `ttl` (applied when reading, never written). */
export const DEFAULT_TTL_SECONDS = 120;

/** The event's time in seconds when it is a finite number, else `undefined`. */
export function timeOf(event: Event): number | undefined {
  const time = event.time;
  return typeof time === "number" && Number.isFinite(time) ? time : undefined;
}

/** The event's metric when it is a finite number, else `undefined`. */
export function metricOf(event: Event): number | undefined {
  const metric = event.metric;
  return typeof metric === "number" && Number.isFinite(metric) ? metric : undefined;
}
