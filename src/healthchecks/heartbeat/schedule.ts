/**
 * When a heartbeat's next ping is expected (docs/healthchecks.md, "Heartbeat checks"): a `period`
 * after the previous ping, or the next occurrence of its cron `schedule` in its time zone (croner,
 * daylight-saving changes included). Plain TypeScript: no Fastify, no SQL.
 */
import type { Cron } from "croner";
import type { HeartbeatDefinition } from "../definition.js";
import { cronOf } from "./fields.js";

/** The rhythm of one heartbeat, all durations in milliseconds. */
export interface HeartbeatRhythm {
  /** The period, or undefined with a schedule. */
  readonly periodMs: number | undefined;
  /** The cron schedule, or undefined with a period. */
  readonly cron: Cron | undefined;
  /** How long after the expected time a missing ping turns the heartbeat down. */
  readonly graceMs: number;
  /** How long a started run may take before its heartbeat is down. */
  readonly maxDurationMs: number;
}

/** The rhythm of a validated definition (its schedule was validated: it parses and occurs). */
export function rhythmOf(definition: HeartbeatDefinition): HeartbeatRhythm {
  return {
    periodMs: definition.period?.milliseconds,
    cron: definition.schedule === undefined ? undefined : cronOf(definition.schedule, definition.timezone, "schedule"),
    graceMs: definition.grace.milliseconds,
    maxDurationMs: definition["max-duration"].milliseconds,
  };
}

/**
 * The time the ping after one at `afterMs` is expected, milliseconds since the epoch: `afterMs +
 * period`, or the schedule's first occurrence strictly after `afterMs`. +∞ for a schedule that no
 * longer occurs (a year that has passed).
 */
export function nextExpected(rhythm: HeartbeatRhythm, afterMs: number): number {
  if (rhythm.periodMs !== undefined) return afterMs + rhythm.periodMs;
  const next = rhythm.cron?.nextRun(new Date(afterMs));
  return next === null || next === undefined ? Number.POSITIVE_INFINITY : next.getTime();
}

/**
 * The time between two expected pings around `atMs`, milliseconds: the period, or the gap between
 * the schedule's next two occurrences (a daily schedule's gap is 23 or 25 hours across a
 * daylight-saving change). Stream events of heartbeat results live this long plus the grace.
 */
export function gapMs(rhythm: HeartbeatRhythm, atMs: number): number {
  if (rhythm.periodMs !== undefined) return rhythm.periodMs;
  const first = nextExpected(rhythm, atMs);
  const second = Number.isFinite(first) ? nextExpected(rhythm, first) : first;
  return Number.isFinite(second) ? second - first : 0;
}
