/**
 * `healthchecks.maintenance` (docs/healthchecks.md): windows that come back on a schedule, each a
 * start (`sun 02:00`, or a cron expression of 5 fields), a duration and a time zone, and the
 * checks it covers. What makes a start a schedule (croner) is here too, for the calendar and the
 * checks of the configuration alike.
 */
import { Cron } from "croner";
import type { Duration } from "../../platform/duration.js";
import * as v from "../../platform/validation.js";
import { selectorText } from "../status-page/selectors.js";

/** A window's name: 1–64 characters of `A-Z a-z 0-9 . _ -` (it is a path segment of the API). */
export const windowName: v.Validator<string> = v.string({
  min: 1,
  max: 64,
  pattern: /^[A-Za-z0-9._-]+$/,
  rule: "must be 1 to 64 characters of A-Z a-z 0-9 . _ -",
});

/** The checks of a window: 1 to 100 names or label selectors (`team=web`), as on the status page. */
export const windowChecks: v.Validator<string[]> = v.array(selectorText, { min: 1, max: 100 });

/** Configured windows at most: each is looked at on the result path. */
export const MAX_CONFIGURED_WINDOWS = 1_000;

/** The shortest window: a schedule counts whole minutes. */
const MIN_DURATION_MS = 60_000;

/** Cron's day-of-week numbers by the first three letters of a weekday. */
const WEEKDAYS = new Map(["sun", "mon", "tue", "wed", "thu", "fri", "sat"].map((day, index) => [day, index]));
const SHORTHAND = /^([a-z]{3}) ([01]?\d|2[0-3]):([0-5]\d)$/i;
const START_RULE =
  "must be a weekday and a time such as sun 02:00, or a cron expression of 5 fields (minute hour day month weekday)";

/**
 * The cron expression of a start: `sun 02:00` (a weekday, its first three letters, and a 24-hour
 * time) becomes `0 2 * * 0`; anything else is taken as a cron expression as written.
 */
export function cronOf(start: string): string {
  const match = SHORTHAND.exec(start.trim());
  if (match === null) return start.trim();
  const [, day = "", hour = "", minute = ""] = match;
  const weekday = WEEKDAYS.get(day.toLowerCase());
  if (weekday === undefined) return start.trim();
  return `${Number(minute)} ${Number(hour)} * * ${weekday}`;
}

/**
 * The schedule of a start in a time zone: croner, in its 5-field mode (minute precision, day of
 * month and day of week combined with OR as in Vixie cron), with the time zone's rules of daylight
 * saving time: a start in the hour skipped in spring comes at the end of the gap, and one in the
 * hour repeated in autumn comes once, at its first occurrence.
 *
 * @throws ValidationError at `path` naming the rule (croner's reason in parentheses)
 */
export function scheduleOf(start: string, timezone: string, path: string): Cron {
  const pattern = cronOf(start);
  // Exactly five fields: croner would also take nicknames (@weekly) and other lengths in other modes.
  if (pattern.split(/\s+/).length !== 5) throw new v.ValidationError(path, START_RULE, start);
  try {
    return new Cron(pattern, { timezone, mode: "5-part", paused: true });
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^CronPattern: /, "") : String(error);
    throw new v.ValidationError(path, `${START_RULE} (${reason})`, start);
  }
}

/** A time zone of the IANA database (`Europe/Paris`, `UTC`), as the runtime knows it. */
export const timeZone: v.Validator<string> = v.described(
  (value, path) => {
    if (typeof value === "string" && value.length <= 64) {
      try {
        new Intl.DateTimeFormat("en", { timeZone: value });
        return value;
      } catch {
        // Refused below, naming the key.
      }
    }
    throw new v.ValidationError(path, "must be a time zone of the IANA database such as Europe/Paris or UTC", value);
  },
  { type: "string", maxLength: 64, description: "an IANA time zone such as Europe/Paris" },
);

/** A window's length: at least a minute. */
const windowDuration: v.Validator<Duration> = v.described((value, path) => {
  const parsed = v.duration()(value, path);
  if (parsed.milliseconds < MIN_DURATION_MS) throw new v.ValidationError(path, "must be at least 1m", value);
  return parsed;
}, v.schemaOf(v.duration()));

const windowShape = {
  name: v.required(windowName),
  checks: v.required(windowChecks),
  start: v.required(v.string({ min: 1, max: 200, rule: START_RULE })),
  duration: v.required(windowDuration),
  timezone: v.withDefault(timeZone, "UTC"),
};

/** A configured window, as validated. */
export type ConfiguredWindow = v.ShapeOf<typeof windowShape>;

const windowList = v.array(v.object(windowShape, { unknownKeys: "reject" }), { max: MAX_CONFIGURED_WINDOWS });

/**
 * `healthchecks.maintenance`: the list, each item's start a schedule that occurs (`0 0 30 2 *`
 * never does), names unique.
 *
 * @throws ValidationError naming the key: `healthchecks.maintenance[0].start: must be a weekday and
 *   a time such as sun 02:00, or ...`, `healthchecks.maintenance[1].name: must be unique
 *   (healthchecks.maintenance[0] has the same name)`
 */
export const maintenanceWindows: v.Validator<ConfiguredWindow[]> = v.withDefault(
  v.described((value, path) => {
    const windows = windowList(value, path);
    const names = new Map<string, string>();
    windows.forEach((window, index) => {
      const itemPath = `${path}[${index}]`;
      const schedule = scheduleOf(window.start, window.timezone, `${itemPath}.start`);
      if (schedule.nextRun() === null) {
        throw new v.ValidationError(`${itemPath}.start`, "never occurs", window.start);
      }
      const previous = names.get(window.name);
      if (previous !== undefined) {
        throw new v.ValidationError(`${itemPath}.name`, `must be unique (${previous} has the same name)`, window.name);
      }
      names.set(window.name, itemPath);
    });
    return windows;
  }, v.schemaOf(windowList)),
  [],
);
