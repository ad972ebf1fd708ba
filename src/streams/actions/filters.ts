/**
 * Actions that let some events through (streams.md §4): tagged-all, over, under, changed, throttle,
 * expired, not-expired, and the `*-dt` family.
 */
import { type ActionDefinition, filtering, withChildren } from "../action.js";
import { compileCondition, compileField } from "../condition.js";
import { ednToJson } from "../edn.js";
import { type Event, fieldReader, isExpired, metricOf, timeOf, valuesEqual } from "../event.js";
import { countParam, expectCount, numberParam, optionsParam, secondsParam, stringsParam } from "./params.js";

/** `tagged-all ["t"]` / `[["t1" "t2"]]`: forwards events carrying all the tags. */
export const taggedAll: ActionDefinition = {
  compile(params, children, path) {
    const wanted = stringsParam(params, path, "tagged-all");
    return filtering(
      "tagged-all",
      (event) => Array.isArray(event.tags) && wanted.every((name) => (event.tags as unknown[]).includes(name)),
      children,
    );
  },
};

function threshold(action: "over" | "under"): ActionDefinition {
  return {
    compile(params, children, path) {
      expectCount(params, 1, 1, path, action, "[n]");
      const bound = numberParam(params[0], path, "n");
      return withChildren(action, children, (next, drop) => {
        return (value) => {
          const metric = Array.isArray(value) ? undefined : metricOf(value);
          if (metric === undefined) drop();
          else if (action === "over" ? metric > bound : metric < bound) next(value);
        };
      });
    },
  };
}

/** `over [n]`: forwards events whose metric is > n. */
export const over = threshold("over");
/** `under [n]`: forwards events whose metric is < n. */
export const under = threshold("under");

/** `changed [{:field f :init v}]`: forwards an event when the field differs from the previous event's. */
export const changed: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "changed", '[{:field :state :init "ok"}]');
    const options = optionsParam(params[0], path, "changed", ["field"], ["init"]);
    const read = fieldReader(compileField(options.get("field"), `${path}.params[0]`));
    const initial = options.has("init") ? ednToJson(options.get("init") ?? null) : undefined;
    return withChildren("changed", children, (next, drop) => {
      let previous = initial;
      return (value) => {
        if (Array.isArray(value)) {
          drop();
          return;
        }
        const current = read(value);
        if (!valuesEqual(current, previous)) {
          previous = current;
          next(value);
        }
      };
    });
  },
};

/** `throttle [{:count n :duration D}]`: forwards at most n events per D seconds of event time. */
export const throttle: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "throttle", "[{:count n :duration D}]");
    const options = optionsParam(params[0], path, "throttle", ["count", "duration"]);
    const limit = countParam(options.get("count"), path, ":count");
    const duration = secondsParam(options.get("duration"), path, ":duration");
    return withChildren("throttle", children, (next, drop) => {
      let windowStart = Number.NEGATIVE_INFINITY;
      let count = 0;
      return (value) => {
        const time = Array.isArray(value) ? undefined : timeOf(value);
        if (time === undefined) {
          drop();
          return;
        }
        if (time >= windowStart + duration) {
          windowStart = time;
          count = 0;
        }
        if (count < limit) {
          count += 1;
          next(value);
        }
      };
    });
  },
};

function expiry(action: "expired" | "not-expired"): ActionDefinition {
  return {
    compile(params, children, path) {
      expectCount(params, 0, 0, path, action, "");
      return withChildren(action, children, (next, drop) => {
        let clock = Number.NEGATIVE_INFINITY;
        return (value) => {
          if (Array.isArray(value)) {
            drop();
            return;
          }
          const time = timeOf(value);
          if (time !== undefined && time > clock) clock = time;
          if (isExpired(value, clock) === (action === "expired")) next(value);
        };
      });
    },
  };
}

/** `expired`: forwards expired events (clock = max time seen by the action). */
export const expired = expiry("expired");
/** `not-expired`: forwards events that are not expired. */
export const notExpired = expiry("not-expired");

/**
 * The `*-dt` family, `[condition D]`: forwards events once the condition has held continuously for
 * more than D seconds of event time; a non-matching event resets. above-dt, below-dt, between-dt,
 * outside-dt, critical-dt and cond-dt share these semantics; the name documents the intent.
 */
export function conditionDuration(action: string): ActionDefinition {
  return {
    compile(params, children, path) {
      expectCount(params, 2, 2, path, action, "[condition D]");
      const holds = compileCondition(params[0], `${path}.params[0]`);
      const duration = secondsParam(params[1], `${path}.params[1]`, "D");
      return withChildren(action, children, (next, drop) => {
        let since: number | undefined;
        return (value) => {
          const time = Array.isArray(value) ? undefined : timeOf(value);
          if (time === undefined) {
            drop();
            return;
          }
          if (!holds(value as Event)) {
            since = undefined;
            return;
          }
          if (since === undefined || time < since) since = time;
          if (time - since > duration) next(value);
        };
      });
    },
  };
}
