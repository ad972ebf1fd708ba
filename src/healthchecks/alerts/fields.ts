/**
 * The validators of a check's `alerts` and `depends-on` fields and of
 * `healthchecks.default-alerts` (docs/alerts.md). What they cannot see alone (whether an output is
 * declared, whether a name is a check, cycles) is checked by references.ts.
 */
import type { Duration } from "../../platform/duration.js";
import {
  array,
  boolean,
  described,
  duration,
  integer,
  object,
  optional,
  required,
  schemaOf,
  string,
  ValidationError,
  type Validator,
  withDefault,
} from "../../platform/validation.js";
import { name } from "../definition-fields.js";
import type { AlertPolicy } from "./policy.js";

/** `failure-threshold` when not given: three consecutive failures trigger an alert. */
export const DEFAULT_FAILURE_THRESHOLD = 3;

/** `success-threshold` when not given: two consecutive successes resolve it. */
export const DEFAULT_SUCCESS_THRESHOLD = 2;

/** The thresholds an alert has when it gives none. */
export interface DefaultThresholds {
  readonly failure: number;
  readonly success: number;
}

/** The thresholds of the alerts of most checks: 3 failures trigger, 2 successes resolve. */
export const CHECK_THRESHOLDS: DefaultThresholds = {
  failure: DEFAULT_FAILURE_THRESHOLD,
  success: DEFAULT_SUCCESS_THRESHOLD,
};

/**
 * The thresholds of the alerts of heartbeat checks (docs/alerts.md): 1 and 1, since one missed
 * run is the failure a heartbeat watches for, and the next ping shows the job is back.
 */
export const HEARTBEAT_THRESHOLDS: DefaultThresholds = { failure: 1, success: 1 };

/** The largest threshold accepted (about a day of results at a 10 s interval). */
export const MAX_THRESHOLD = 10_000;

/** Alerts one check has at most. */
export const MAX_ALERTS = 20;

/** Parents one check depends on at most. */
export const MAX_PARENTS = 100;

/** An output's name, as outputs are named (1 to 128 characters of A-Z a-z 0-9 . _ -). */
const outputName: Validator<string> = string({
  pattern: /^[A-Za-z0-9._-]{1,128}$/,
  patternRule: "must be an output name: 1 to 128 characters of A-Z a-z 0-9 . _ -",
});

/** A `repeat`: a duration of at least `healthchecks.min-interval`. */
function repeatValidator(minInterval: Duration): Validator<Duration> {
  const parse = duration();
  return described(
    (value, path) => {
      const parsed = parse(value, path);
      if (parsed.milliseconds < minInterval.milliseconds) {
        throw new ValidationError(path, `must be at least ${minInterval.text} (healthchecks.min-interval)`, value);
      }
      return parsed;
    },
    { type: "string", description: "a duration of at least healthchecks.min-interval, such as 1h" },
  );
}

/** One alert. Unknown keys are refused (a misspelt threshold must not be lost), API or file. */
function alertValidator(minInterval: Duration, thresholds: DefaultThresholds): Validator<AlertPolicy> {
  return object(
    {
      output: required(outputName),
      "failure-threshold": withDefault(integer(1, MAX_THRESHOLD), thresholds.failure),
      "success-threshold": withDefault(integer(1, MAX_THRESHOLD), thresholds.success),
      "send-on-resolved": withDefault(boolean(), true),
      repeat: optional(repeatValidator(minInterval)),
      description: withDefault(string({ max: 1_000 }), ""),
    },
    { unknownKeys: "reject" },
  );
}

/**
 * A list of alerts: at most {@link MAX_ALERTS}, one per output (an alert is known by its check and
 * its output).
 *
 * @throws ValidationError `alerts[1].output: must differ from the output of alerts[0]`, or a rule of
 *   an alert's field (`alerts[0].failure-threshold: must be an integer between 1 and 10000`)
 */
export function alertsValidator(
  minInterval: Duration,
  thresholds: DefaultThresholds = CHECK_THRESHOLDS,
): Validator<AlertPolicy[]> {
  const list = array(alertValidator(minInterval, thresholds), { max: MAX_ALERTS });
  return described((value, path) => {
    const alerts = list(value, path);
    alerts.forEach((alert, index) => {
      const first = alerts.findIndex((other) => other.output === alert.output);
      if (first !== index) {
        throw new ValidationError(`${path}[${index}].output`, `must differ from the output of ${path}[${first}]`);
      }
    });
    return alerts;
  }, schemaOf(list));
}

/**
 * `depends-on`: the names of the checks this one depends on, at most {@link MAX_PARENTS}, each
 * once. Whether they exist, and cycles, are checked against the other checks (references.ts).
 */
export const dependsOnValidator: Validator<string[]> = (() => {
  const list = array(name, { max: MAX_PARENTS });
  return described(
    (value: unknown, path: string) => {
      const names = list(value, path);
      names.forEach((parent, index) => {
        if (names.indexOf(parent) !== index) {
          throw new ValidationError(`${path}[${index}]`, `must not repeat ${parent}`);
        }
      });
      return names;
    },
    {
      type: "array",
      items: { type: "string", minLength: 1, maxLength: 255 },
      maxItems: MAX_PARENTS,
      uniqueItems: true,
    },
  );
})();
