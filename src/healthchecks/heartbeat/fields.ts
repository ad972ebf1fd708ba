/**
 * The fields of heartbeat checks (docs/healthchecks.md, "Heartbeat checks"): `period` or
 * `schedule` (a 5-field cron expression read by croner in a `timezone`), `grace`, `max-duration`
 * and the ping `key`. Plain TypeScript: no Fastify, no SQL.
 */
import { randomBytes } from "node:crypto";
import { Cron } from "croner";
import { DURATION_PATTERN, type Duration } from "../../platform/duration.js";
import { childPath, described, duration, string, ValidationError, type Validator } from "../../platform/validation.js";

/** `grace` when not given: one hour. */
export const DEFAULT_GRACE: Duration = { text: "1h", milliseconds: 3_600_000 };

/** A ping key: 22 or more URL-safe characters (22 is 128 bits in base64url), at most 128. */
export const KEY_PATTERN = /^[A-Za-z0-9_-]{22,128}$/;

const KEY_RULE = "must be 22 to 128 characters of A-Z a-z 0-9 _ -";

const SCHEDULE_RULE = "must be a cron expression of 5 fields (minute hour day-of-month month day-of-week)";

/** A new ping key: 128 random bits, base64url (22 characters). */
export function newKey(): string {
  return randomBytes(16).toString("base64url");
}

/** A ping key as posted or configured. Not a secret: the API returns it, as a ping URL must be. */
export const heartbeatKey: Validator<string> = string({ pattern: KEY_PATTERN, rule: KEY_RULE });

/** Any duration, built once: the validators below run for every heartbeat definition. */
const anyDuration = duration();

/** A duration of at least `minInterval` (`healthchecks.min-interval`): `period` and `grace`. */
export function atLeastMinInterval(minInterval: Duration): Validator<Duration> {
  return described(
    (value, path) => {
      const parsed = anyDuration(value, path);
      if (parsed.milliseconds < minInterval.milliseconds || parsed.milliseconds <= 0) {
        throw new ValidationError(path, `must be at least ${minInterval.text} (healthchecks.min-interval)`, value);
      }
      return parsed;
    },
    { type: "string", pattern: DURATION_PATTERN, description: "a duration of at least healthchecks.min-interval" },
  );
}

/** A duration longer than zero: `max-duration`. */
export const positive: Validator<Duration> = described(
  (value, path) => {
    const parsed = anyDuration(value, path);
    if (parsed.milliseconds <= 0) throw new ValidationError(path, "must be greater than 0", value);
    return parsed;
  },
  { type: "string", pattern: DURATION_PATTERN },
);

/**
 * The croner schedule of a 5-field cron expression in `timezone`: minute precision, day of month
 * and day of week combined with OR as Vixie cron does, daylight-saving rules of the zone applied
 * (a time skipped in spring comes at the end of the gap, a time repeated in autumn comes once).
 *
 * @throws ValidationError at `path` naming the rule, croner's reason in parentheses
 */
export function cronOf(expression: string, timezone: string, path: string): Cron {
  // Exactly five fields: croner would also take nicknames (@daily) and 6 or 7 fields otherwise.
  if (expression.trim().split(/\s+/).length !== 5) throw new ValidationError(path, SCHEDULE_RULE, expression);
  let cron: Cron;
  try {
    cron = new Cron(expression.trim(), { timezone, mode: "5-part", paused: true });
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^CronPattern: /, "") : String(error);
    throw new ValidationError(path, `${SCHEDULE_RULE} (${reason})`, expression);
  }
  if (cron.nextRun() === null) throw new ValidationError(path, "must be a cron expression that occurs", expression);
  return cron;
}

/**
 * `schedule`, checked against the definition's `timezone` (validated before it) and exclusive with
 * `period`: exactly one of them is given.
 *
 * @param definition the raw definition (`input`) and where it is (`path`, `""` for an API body),
 *   read when a value is checked: one validator serves every definition validated in turn
 * @param zone the validated time zone of the definition
 */
export function scheduleValidator(
  definition: { readonly input: Readonly<Record<string, unknown>>; readonly path: string },
  zone: () => string,
): Validator<string | undefined> {
  return described(
    (value, at) => {
      const { input, path } = definition;
      const hasPeriod = input.period !== undefined && input.period !== null;
      if (value === undefined || value === null) {
        if (!hasPeriod) throw new ValidationError(childPath(path, "period"), "is required unless schedule is given");
        return undefined;
      }
      if (hasPeriod) throw new ValidationError(at, "must not be given with period (give one of them)");
      if (typeof value !== "string") throw new ValidationError(at, SCHEDULE_RULE, value);
      cronOf(value, zone(), at);
      return value.trim();
    },
    { type: "string", description: "a cron expression of 5 fields, in timezone; exclusive with period" },
  );
}
