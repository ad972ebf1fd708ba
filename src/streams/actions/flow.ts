/**
 * Actions that route events: sdo, where, split, by, exception-stream.
 */
import { errorMessage } from "../../platform/errors.js";
import {
  type ActionDefinition,
  buildChildren,
  claimCounter,
  counterOf,
  discard,
  type Flow,
  fanOut,
  filtering,
  type Next,
  type Runtime,
} from "../action.js";
import { CompileError } from "../compile-error.js";
import { compileCondition, compileField } from "../condition.js";
import { type EdnValue, isMap, mapGet } from "../edn.js";
import { type Event, type FieldPath, type FieldReader, fieldReader, timeOf } from "../event.js";
import { mostRecent } from "./collections.js";
import { conditionsParam, expectCount, itemsParam, optionsParam, secondsParam } from "./params.js";

/** `sdo`: forwards to all children. */
export const sdo: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 0, 0, path, "sdo", "");
    return (runtime) => buildChildren(children, runtime);
  },
};

/** `where [condition]`: forwards events matching the condition. */
export const where: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "where", "[condition]");
    const matches = compileCondition(params[0], `${path}.params[0]`);
    return filtering("where", matches, children);
  },
};

/**
 * `split [[c1 c2 ...]]`: the first matching condition's child gets the event; an optional last
 * child beyond the conditions gets events that matched none.
 */
export const split: ActionDefinition = {
  routes: true,
  compile(params, children, path) {
    const conditions = conditionsParam(params, path, "split", ":split takes a vector of conditions");
    if (children.length !== conditions.length && children.length !== conditions.length + 1) {
      throw new CompileError(
        path,
        `:split with ${conditions.length} conditions needs ${conditions.length} children, or one more as default`,
      );
    }
    return (runtime) => {
      const nexts = children.map((child) => child(runtime));
      // Every condition has its child (checked above); the fallback is the optional one after them.
      const routes = conditions.map((condition, i) => ({ condition, next: nexts[i] ?? discard }));
      const fallback: Next | undefined = nexts[conditions.length];
      const drop = runtime.dropped("split");
      return (value) => {
        if (Array.isArray(value)) {
          drop();
          return;
        }
        for (const route of routes) {
          if (route.condition(value)) {
            route.next(value);
            return;
          }
        }
        fallback?.(value);
      };
    };
  },
};

/** Separates the values of several fields in a fork key; cannot appear in JSON-encoded values. */
const KEY_SEPARATOR = "\u0000";

/**
 * The fork key of an event: for one field, its value when a string, a number or missing (Map keys
 * as they are, nothing allocated), else its JSON text; for several fields, their texts joined.
 */
function forkKeyOf(paths: readonly FieldPath[], readers: readonly FieldReader[]): (event: Event) => unknown {
  const [read] = readers;
  const [path] = paths;
  const name = path?.length === 1 ? path[0] : undefined;
  if (readers.length === 1 && name !== undefined) {
    // The usual `by [:host]`: the field read here rather than through a reader the where-conditions
    // share, which keeps this property load's feedback to the fields that `by` reads.
    return (event) => {
      const value = event[name];
      return typeof value === "string" || typeof value === "number" || value === undefined
        ? value
        : JSON.stringify(value);
    };
  }
  if (readers.length === 1 && read !== undefined) {
    // Strings and numbers are Map keys as they are; other values by their JSON text.
    return (event) => {
      const value = read(event);
      return typeof value === "string" || typeof value === "number" || value === undefined
        ? value
        : JSON.stringify(value);
    };
  }
  return (event) => {
    let key = "";
    for (const read of readers) {
      const value = read(event);
      key += `${typeof value === "string" ? value : (JSON.stringify(value) ?? "")}${KEY_SEPARATOR}`;
    }
    return key;
  };
}

/**
 * `by [{:fields [f ...] :gc-interval D :fork-ttl D}]` (or `[[f ...]]`): one independent copy of the
 * children per distinct tuple of field values. With `:gc-interval`, collection runs on the first
 * event with a time and then on each event whose time is at least the last collection +
 * gc-interval, before the event is routed: forks whose previous event is more than `:fork-ttl`
 * seconds (default: the gc interval) older are dropped, the arriving event's own fork included
 * (it restarts empty).
 */
export const by: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "by", "[{:fields [:field ...]}]");
    let fieldsValue: EdnValue | undefined = params[0];
    let gcInterval: number | undefined;
    let forkTtl: number | undefined;
    if (isMap(params[0])) {
      const options = optionsParam(params[0], path, "by", ["fields"], ["gc-interval", "fork-ttl"]);
      fieldsValue = options.get("fields");
      if (options.has("gc-interval")) gcInterval = secondsParam(mapGet(params[0], "gc-interval"), path, ":gc-interval");
      if (options.has("fork-ttl")) forkTtl = secondsParam(mapGet(params[0], "fork-ttl"), path, ":fork-ttl");
      if (forkTtl !== undefined && gcInterval === undefined) {
        throw new CompileError(path, ":fork-ttl needs :gc-interval");
      }
    }
    const items = itemsParam(fieldsValue, path, ":by needs a non-empty vector of fields");
    const paths = items.map((item, index) => compileField(item, `${path}.params[0].fields[${index}]`));
    const keyOf = forkKeyOf(paths, paths.map(fieldReader));
    /** Forks are collected when both are set: every `interval` seconds, those idle for `ttl`. */
    const gc = gcInterval === undefined ? undefined : { interval: gcInterval, ttl: forkTtl ?? gcInterval };
    const slot = claimCounter();
    return (runtime) => {
      const counter = counterOf(runtime, slot);
      const forks = new Map<unknown, { next: Next; seen: number }>();
      const maxForks = runtime.limits.forks;
      const drop = runtime.dropped("by");
      /** When the next collection is due: the first event's time, then the last collection + gc-interval. */
      let nextCollection: number | undefined;
      const collect = (now: number, ttl: number) => {
        for (const [key, fork] of forks) if (now - fork.seen > ttl) forks.delete(key);
      };
      return (value) => {
        counter.count++;
        if (Array.isArray(value)) {
          drop();
          return;
        }
        const time = gc === undefined ? undefined : timeOf(value);
        // Collection runs before the event is routed, judging each fork by its previous event: the
        // arriving event's own fork may be dropped and restart empty (Mirabelle v0.13).
        if (gc !== undefined && time !== undefined && (nextCollection === undefined || time >= nextCollection)) {
          collect(time, gc.ttl);
          nextCollection = time + gc.interval;
        }
        const key = keyOf(value);
        let fork = forks.get(key);
        if (fork === undefined) {
          // Bounded by `streams.max-forks`: an event that needs one fork too many is dropped.
          if (forks.size >= maxForks) {
            drop();
            return;
          }
          fork = { next: fanOut(children.map((child) => child(runtime))), seen: Number.NEGATIVE_INFINITY };
          forks.set(key, fork);
        }
        if (time !== undefined) fork.seen = time;
        fork.next(value);
      };
    };
  },
};

/** The `service` of the events `exception-stream` sends its second child. */
export const EXCEPTION_SERVICE = "vigie-exception";

/**
 * The event `exception-stream` sends when its first child could not apply an action to `value`:
 * `{:time <event time> :service "vigie-exception" :state "error" :metric 1
 * :tags ["exception"] :description <message> :base-event <event>}`. A list's time is that of its
 * most recent event; `time` is left out when there is none.
 */
export function exceptionEvent(value: Flow, description: string): Event {
  const base = Array.isArray(value) ? (value.length > 0 ? mostRecent(value) : undefined) : value;
  const time = base === undefined ? undefined : timeOf(base);
  return {
    ...(time === undefined ? {} : { time }),
    service: EXCEPTION_SERVICE,
    state: "error",
    metric: 1,
    tags: ["exception"],
    description,
    "base-event": value,
  };
}

/**
 * `exception-stream` with exactly 2 children: runs the first; when an action inside it cannot apply
 * to the event (what would otherwise be counted in `stream_dropped_events_total`), or throws, the
 * second child receives {@link exceptionEvent} instead of the drop being counted, one per failure.
 * The base event is the one that entered `exception-stream` (as Mirabelle's); the first child goes
 * on with its other branches, as a drop never aborts a push. Failures that happen later, outside the
 * run of an event through the first child (under an `async-queue`), are counted as usual.
 */
export const exceptionStream: ActionDefinition = {
  routes: true,
  compile(params, children, path) {
    expectCount(params, 0, 0, path, "exception-stream", "");
    const [body, handler] = children;
    if (children.length !== 2 || body === undefined || handler === undefined) {
      throw new CompileError(path, `:exception-stream takes exactly 2 children, got ${children.length}`);
    }
    return (runtime) => {
      const onFailure = handler(runtime);
      /** The value being run through the first child, while it runs. */
      let current: Flow | undefined;
      const guarded: Runtime = {
        ...runtime,
        dropped: (action) => {
          const count = runtime.dropped(action);
          return () => {
            if (current === undefined) count();
            else onFailure(exceptionEvent(current, `action :${action} could not apply to the event`));
          };
        },
      };
      const run = body(guarded);
      return (value) => {
        const previous = current;
        current = value;
        try {
          run(value);
        } catch (error) {
          onFailure(exceptionEvent(value, errorMessage(error)));
        } finally {
          current = previous;
        }
      };
    };
  },
};
