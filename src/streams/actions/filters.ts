/**
 * Actions that let some events through: tagged-all, over, under, changed, throttle,
 * expired, not-expired, and the `*-dt` family.
 */
import { type ActionDefinition, filtering, onEvents } from "../action.js";
import { compileCondition, compileField } from "../condition.js";
import { ednToJson } from "../edn.js";
import { fieldReader, isExpired, metricOf, timeOf, valuesEqual } from "../event.js";
import { countParam, expectCount, numberParam, secondsParam, soleOptionsParam, stringsParam } from "./params.js";

/** `tagged-all ["t"]` / `[["t1" "t2"]]`: forwards events carrying all the tags. */
export const taggedAll: ActionDefinition = {
  compile(params, children, path) {
    const wanted = stringsParam(params, path, "tagged-all");
    return filtering(
      "tagged-all",
      (event) => {
        const tags = event.tags;
        return Array.isArray(tags) && wanted.every((name) => tags.includes(name));
      },
      children,
    );
  },
};

function threshold(action: "over" | "under"): ActionDefinition {
  return {
    compile(params, children, path) {
      expectCount(params, 1, 1, path, action, "[n]");
      const bound = numberParam(params[0], path, "n");
      return onEvents(action, children, (next, drop) => (event) => {
        const metric = metricOf(event);
        if (metric === undefined) drop();
        else if (action === "over" ? metric > bound : metric < bound) next(event);
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
    const options = soleOptionsParam(params, path, "changed", '[{:field :state :init "ok"}]', ["field"], ["init"]);
    const read = fieldReader(compileField(options.get("field"), `${path}.params[0]`));
    const initial = options.has("init") ? ednToJson(options.get("init") ?? null) : undefined;
    return onEvents("changed", children, (next) => {
      let previous = initial;
      return (event) => {
        const current = read(event);
        if (!valuesEqual(current, previous)) {
          previous = current;
          next(event);
        }
      };
    });
  },
};

/** `throttle [{:count n :duration D}]`: forwards at most n events per D seconds of event time. */
export const throttle: ActionDefinition = {
  compile(params, children, path) {
    const options = soleOptionsParam(params, path, "throttle", "[{:count n :duration D}]", ["count", "duration"]);
    const limit = countParam(options.get("count"), path, ":count");
    const duration = secondsParam(options.get("duration"), path, ":duration");
    return onEvents("throttle", children, (next, drop) => {
      let windowStart = Number.NEGATIVE_INFINITY;
      let count = 0;
      return (event) => {
        const time = timeOf(event);
        if (time === undefined) drop();
        else if (time >= windowStart + duration) {
          windowStart = time;
          count = 1;
          next(event);
        } else if (count < limit) {
          count += 1;
          next(event);
        }
      };
    });
  },
};

function expiry(action: "expired" | "not-expired"): ActionDefinition {
  return {
    compile(params, children, path) {
      expectCount(params, 0, 0, path, action, "");
      return onEvents(action, children, (next) => {
        let clock = Number.NEGATIVE_INFINITY;
        return (event) => {
          const time = timeOf(event);
          if (time !== undefined && time > clock) clock = time;
          if (isExpired(event, clock) === (action === "expired")) next(event);
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
      return onEvents(action, children, (next, drop) => {
        let since: number | undefined;
        return (event) => {
          const time = timeOf(event);
          if (time === undefined) drop();
          else if (!holds(event)) since = undefined;
          else {
            if (since === undefined || time < since) since = time;
            if (time - since > duration) next(event);
          }
        };
      });
    },
  };
}
