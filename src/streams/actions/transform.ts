/**
 * Actions that change single events: with, default, tag, untag, increment,
 * decrement, scale, rename-keys, keep-keys, sdissoc, ddt, ddt-pos, ewma-timeless. Events are never
 * modified in place: other branches may hold the same object.
 */

import { isPlainObject } from "../../platform/validation.js";
import { type ActionDefinition, onEvents, transforming } from "../action.js";
import { CompileError } from "../compile-error.js";
import { compileField } from "../condition.js";
import { ednToJson, isMap, nameOf } from "../edn.js";
import { type Event, type FieldPath, fieldReader, metricOf, timeOf, withField } from "../event.js";
import { expectCount, keysParam, numberParam, stringsParam } from "./params.js";

/** `with [{field value ...}]`: sets fields (nested paths as vectors). */
export const withAction: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "with", "[{:field value ...}]");
    const map = params[0];
    if (!isMap(map) || map.map.length === 0)
      throw new CompileError(path, ":with takes a non-empty map of fields to values");
    const assignments: Array<[FieldPath, unknown]> = map.map.map(([field, value], index) => [
      compileField(field, `${path}.params[0][${index}]`),
      ednToJson(value),
    ]);
    // Top-level fields only: set on one copy, without walking paths.
    const topLevel = assignments.flatMap(([[key, ...rest], value]) =>
      key !== undefined && rest.length === 0 ? [[key, value] as const] : [],
    );
    const simple = topLevel.length === assignments.length;
    return transforming("with", children, (event) => {
      if (simple) {
        const copy = { ...event };
        for (const [key, value] of topLevel) copy[key] = value;
        return copy;
      }
      let result = event;
      for (const [field, value] of assignments) result = withField(result, field, value);
      return result;
    });
  },
};

/** `default [field value]`: sets the field only when it is missing or null. */
export const defaultAction: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 2, 2, path, "default", "[field value]");
    const field = compileField(params[0], `${path}.params[0]`);
    const value = ednToJson(params[1] ?? null);
    const read = fieldReader(field);
    return transforming("default", children, (event) => (read(event) == null ? withField(event, field, value) : event));
  },
};

function tagsOf(event: Event): unknown[] {
  const tags = event.tags;
  return Array.isArray(tags) ? tags : [];
}

/**
 * `tag ["t"]` / `tag [["t1" "t2"]]`: puts the tags in front of the existing ones, without
 * duplicates (`tag ["foo"]` on `["bar"]` gives `["foo" "bar"]`, as Mirabelle's `(distinct (concat
 * new old))`).
 */
export const tag: ActionDefinition = {
  compile(params, children, path) {
    const added: unknown[] = [...new Set(stringsParam(params, path, "tag"))];
    return transforming("tag", children, (event) => ({ ...event, tags: [...new Set([...added, ...tagsOf(event)])] }));
  },
};

/** `untag ["t"]` / `untag [["t1" "t2"]]`: removes tags; an event without `:tags` gets `[]`. */
export const untag: ActionDefinition = {
  compile(params, children, path) {
    const removed: ReadonlySet<unknown> = new Set(stringsParam(params, path, "untag"));
    return transforming("untag", children, (event) => ({
      ...event,
      tags: tagsOf(event).filter((name) => !removed.has(name)),
    }));
  },
};

function metricChange(action: string, change: (metric: number) => number): ActionDefinition {
  return {
    compile(params, children, path) {
      expectCount(params, 0, 0, path, action, "");
      return transforming(action, children, (event) => {
        const metric = metricOf(event);
        return metric === undefined ? undefined : { ...event, metric: change(metric) };
      });
    },
  };
}

/** `increment`: metric + 1. */
export const increment = metricChange("increment", (metric) => metric + 1);
/** `decrement`: metric − 1. */
export const decrement = metricChange("decrement", (metric) => metric - 1);

/** `scale [factor]`: metric × factor. */
export const scale: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "scale", "[factor]");
    const factor = numberParam(params[0], path, "the factor");
    return transforming("scale", children, (event) => {
      const metric = metricOf(event);
      return metric === undefined ? undefined : { ...event, metric: metric * factor };
    });
  },
};

/** `rename-keys [{old new ...}]`: renames top-level fields. */
export const renameKeys: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "rename-keys", "[{:old :new ...}]");
    const map = params[0];
    if (!isMap(map)) throw new CompileError(path, ":rename-keys takes a map of old to new keys");
    const renames = map.map.map(([from, to]) => {
      const source = nameOf(from);
      const target = nameOf(to);
      if (source === undefined || target === undefined)
        throw new CompileError(path, ":rename-keys maps keywords to keywords");
      return [source, target] as const;
    });
    return transforming("rename-keys", children, (event) => {
      let copy: Event | undefined;
      for (const [source, target] of renames) {
        if (!Object.hasOwn(event, source)) continue;
        copy ??= { ...event };
        const value = copy[source];
        delete copy[source];
        copy[target] = value;
      }
      return copy ?? event;
    });
  },
};

/**
 * `keep-keys [[k ...]]`: keeps only these fields; a key may be a nested path `[:foo :bar]`, which
 * keeps that leaf inside its parents (`keep-keys [[[:foo :bar] :a]]` on `{:a 1 :b 2 :foo {:bar 1
 * :baz 2}}` gives `{:a 1 :foo {:bar 1}}`).
 */
export const keepKeys: ActionDefinition = {
  compile(params, children, path) {
    const paths = keysParam(params, path, "keep-keys");
    const keys = paths.flatMap(([key, ...rest]) => (key !== undefined && rest.length === 0 ? [key] : []));
    if (keys.length === paths.length) {
      return transforming("keep-keys", children, (event) => {
        const kept: Event = {};
        for (const key of keys) if (Object.hasOwn(event, key)) kept[key] = event[key];
        return kept;
      });
    }
    const readers = paths.map((field) => ({ field, read: fieldReader(field) }));
    return transforming("keep-keys", children, (event) => {
      let kept: Event = {};
      for (const { field, read } of readers) {
        const value = read(event);
        if (value !== undefined) kept = withField(kept, field, value);
      }
      return kept;
    });
  },
};

/**
 * A copy of `event` without the field at `path` (from `index` on); a parent map left empty is
 * removed too. Only the maps on the path are copied; the event itself is returned when it has no
 * such field.
 */
function withoutField(event: Event, path: FieldPath, index = 0): Event {
  const key = path[index];
  if (key === undefined || !Object.hasOwn(event, key)) return event;
  const copy = { ...event };
  if (index === path.length - 1) {
    delete copy[key];
    return copy;
  }
  const inner = event[key];
  if (!isPlainObject(inner)) return event;
  const reduced = withoutField(inner, path, index + 1);
  if (reduced === inner) return event;
  if (Object.keys(reduced).length === 0) delete copy[key];
  else copy[key] = reduced;
  return copy;
}

/**
 * `sdissoc [[k ...]]`: removes these fields; a key may be a nested path `[:foo :bar]`, and a parent
 * map left empty is removed too (`sdissoc [[:foo [:nested :key]]]` on `{:nested {:key 1} :metric
 * 2}` gives `{:metric 2}`).
 */
export const sdissoc: ActionDefinition = {
  compile(params, children, path) {
    const paths = keysParam(params, path, "sdissoc");
    return transforming("sdissoc", children, (event) => {
      let result = event;
      for (const field of paths) result = withoutField(result, field);
      return result === event ? { ...event } : result;
    });
  },
};

function derivative(action: "ddt" | "ddt-pos"): ActionDefinition {
  return {
    compile(params, children, path) {
      // Mirabelle's builder writes `[false]` for ddt and `[true]` for ddt-pos: accepted, ignored.
      expectCount(params, 0, 1, path, action, "[] or [boolean]");
      if (params.length === 1 && typeof params[0] !== "boolean") {
        throw new CompileError(path, `:${action} takes no params, or one boolean (ignored)`);
      }
      return onEvents(action, children, (next, drop) => {
        let previousMetric: number | undefined;
        let previousTime = 0;
        return (event) => {
          const metric = metricOf(event);
          const time = timeOf(event);
          if (metric === undefined || time === undefined) {
            drop();
            return;
          }
          const lastMetric = previousMetric;
          const lastTime = previousTime;
          previousMetric = metric;
          previousTime = time;
          if (lastMetric === undefined) return; // the first event only primes the state
          const elapsed = time - lastTime;
          if (elapsed <= 0) {
            drop();
            return;
          }
          const rate = (metric - lastMetric) / elapsed;
          if (action === "ddt-pos" && rate < 0) return;
          next({ ...event, metric: rate });
        };
      });
    },
  };
}

/** `ddt`: metric := (metric − previous metric) ÷ (time − previous time); the first event emits nothing. */
export const ddt = derivative("ddt");
/** `ddt-pos`: as ddt, dropping negative rates. */
export const ddtPos = derivative("ddt-pos");

/**
 * `ewma-timeless [r]`: metric := r·metric + (1−r)·previous, the previous average starting at 0 as
 * in Riemann's `ewma-timeless`.
 */
export const ewmaTimeless: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "ewma-timeless", "[r]");
    const r = numberParam(params[0], path, "r");
    if (r < 0 || r > 1) throw new CompileError(path, "r must be between 0 and 1");
    return onEvents("ewma-timeless", children, (next, drop) => {
      let average = 0;
      return (event) => {
        const metric = metricOf(event);
        if (metric === undefined) drop();
        else {
          average = r * metric + (1 - r) * average;
          next({ ...event, metric: average });
        }
      };
    });
  },
};
