/**
 * Actions that send events out of the tree: index, reaper, reinject, the logging
 * actions info/debug/error, and tap (for `vigie stream test`).
 */
import { type ActionDefinition, buildChildren, type Destination } from "../action.js";
import { CompileError } from "../compile-error.js";
import { compileField } from "../condition.js";
import { type EdnValue, isKeyword, nameOf, sequenceItems } from "../edn.js";
import { fieldReader, timeOf } from "../event.js";
import { IndexKeys } from "../stream-index.js";
import { expectCount, secondsParam } from "./params.js";

/**
 * `index [[f ...]]`: stores each event that has a time in the stream's index under the key made of
 * the listed fields present in the event; an event with state `expired` removes its key. Each
 * stored (or removing) event is published on the channel `<stream>-index`.
 */
export const index: ActionDefinition = {
  leaf: true,
  compile(params, _children, path) {
    expectCount(params, 1, 1, path, "index", "[[:field ...]]");
    const items = sequenceItems(params[0]);
    if (items === undefined || items.length === 0)
      throw new CompileError(path, ":index takes a non-empty vector of fields");
    const fields = items.map((item, position) => {
      const field = compileField(item, `${path}.params[0][${position}]`);
      return { name: field.join("."), read: fieldReader(field) };
    });
    return (runtime) => {
      const keys = new IndexKeys(fields);
      const drop = runtime.dropped("index");
      // Every stored event is published on the channel `<stream>-index` (for its WebSocket subscribers).
      const publish = runtime.publish(`${runtime.stream}-index`);
      return (value) => {
        if (Array.isArray(value)) {
          drop();
          return;
        }
        if (runtime.index.put(keys.find(value), value)) publish(value);
        else drop();
      };
    };
  },
};

/** Reads a destination param: nil (this stream), `:default` (the default streams) or a stream name. */
function destinationParam(value: EdnValue | undefined, path: string): Destination {
  if (value === undefined || value === null) return { kind: "self" };
  if (isKeyword(value, "default")) return { kind: "default" };
  const name = nameOf(value);
  if (name === undefined || name === "") {
    throw new CompileError(path, "the destination must be nil, :default or a stream name (keyword or string)");
  }
  return { kind: "stream", name };
}

/** `reinject [stream-or-nil]`: pushes the event into another stream, the default streams, or this one. */
export const reinject: ActionDefinition = {
  leaf: true,
  compile(params, _children, path) {
    expectCount(params, 0, 1, path, "reinject", "[stream-or-nil]");
    const destination = destinationParam(params[0], `${path}.params[0]`);
    return (runtime) => (value) => {
      if (Array.isArray(value)) for (const event of value) runtime.reinject(destination, event);
      else runtime.reinject(destination, value);
    };
  },
};

/**
 * `reaper [D stream-or-nil]`: every D seconds of event time (its clock starts at 0, so the first
 * sweep comes with the first event whose time is ≥ D), removes the expired events of the stream's
 * index and pushes them, with state `expired`, into the named stream or (nil) this stream.
 */
export const reaper: ActionDefinition = {
  leaf: true,
  compile(params, _children, path) {
    expectCount(params, 1, 2, path, "reaper", "[D stream-or-nil]");
    const interval = secondsParam(params[0], `${path}.params[0]`, "D");
    const destination = destinationParam(params[1], `${path}.params[1]`);
    return (runtime) => {
      // The clock starts at 0: the first sweep comes with the first event whose time is ≥ D (with
      // real Unix times, the very first event), as Mirabelle's reaper.
      let nextRun = interval;
      return (value) => {
        const time = Array.isArray(value) ? undefined : timeOf(value);
        if (time === undefined || time < nextRun) return;
        nextRun = time + interval;
        for (const event of runtime.index.removeExpired(time)) {
          runtime.reinject(destination, { ...event, state: "expired" });
        }
      };
    };
  },
};

function logging(level: "info" | "debug" | "error"): ActionDefinition {
  return {
    compile(params, children, path) {
      expectCount(params, 0, 0, path, level, "");
      return (runtime) => {
        const next = buildChildren(children, runtime);
        return (value) => {
          runtime.log(level, value);
          next(value);
        };
      };
    },
  };
}

/** `info`: logs the event (JSON) with the stream name at info level, and forwards it. */
export const info = logging("info");
/** `debug`: as info, at debug level. */
export const debug = logging("debug");
/** `error`: as info, at error level. */
export const error = logging("error");

/** `tap [:name]`: records what reaches it under a name (in `vigie stream test`), and forwards it. */
export const tap: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "tap", "[:name]");
    const name = nameOf(params[0]);
    if (name === undefined || name === "") throw new CompileError(path, ":tap takes a keyword or string name");
    return (runtime) => {
      const next = buildChildren(children, runtime);
      return (value) => {
        runtime.tap(name, value);
        next(value);
      };
    };
  },
};
