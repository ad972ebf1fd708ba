/**
 * Actions on lists of events, as windows emit them. A single event given to any of
 * them is counted as dropped; lists are shared with the window's other children, so they are never
 * reordered or changed in place.
 *
 * Aggregations: coll-count, coll-sum, coll-mean, coll-max, coll-min, coll-rate turn a list into one
 * event, the most recent (largest time; the last of the list when none has a time) with the metric
 * replaced, its other fields kept as they are (nulls included). An empty list gives `{:metric 0}`
 * from coll-count and nothing from the others (Mirabelle v0.13); coll-quotient and coll-increase
 * (phase 2) follow the same rules.
 *
 * Selections: coll-where filters a list; coll-top, coll-bottom and coll-sort (phase 2) give a new
 * list; coll-percentiles picks one event per quantile; sflatten emits the events one by one.
 */
import { type ActionDefinition, type Builder, counting, type Next, withChildren } from "../action.js";
import { CompileError } from "../compile-error.js";
import { compileCondition } from "../condition.js";
import { sequenceItems } from "../edn.js";
import { compareValues, type Event, fieldReader, metricOf, timeOf } from "../event.js";
import { countParam, expectCount, fieldParam, numberParam } from "./params.js";

/** Reduces a list to a metric, or `undefined` when it cannot (no numeric metric, no time span). */
export type Aggregate = (events: readonly Event[]) => number | undefined;

/**
 * The most recent event of a non-empty list (the base of an aggregate): the largest time, the
 * later one in the list on ties; the last of the list when none has a time. Events without time
 * count as older than any event with one (as Mirabelle's `(last (sort-by :time events))`).
 * @throws RangeError for an empty list (callers check first)
 */
export function mostRecent(events: readonly Event[]): Event {
  let latest: Event | undefined;
  let latestTime = Number.NEGATIVE_INFINITY;
  for (const event of events) {
    const time = timeOf(event);
    if (time !== undefined && time >= latestTime) {
      latest = event;
      latestTime = time;
    }
  }
  if (latest !== undefined) return latest;
  const last = events[events.length - 1];
  if (last === undefined) throw new RangeError("an empty list has no most recent event");
  return last;
}

function metrics(events: readonly Event[], combine: (acc: number, metric: number) => number): number | undefined {
  let result: number | undefined;
  for (const event of events) {
    const metric = metricOf(event);
    if (metric !== undefined) result = result === undefined ? metric : combine(result, metric);
  }
  return result;
}

/** Number of events. */
export const countOf: Aggregate = (events) => events.length;
/** Sum of the numeric metrics. */
export const sumOf: Aggregate = (events) => metrics(events, (a, b) => a + b);
/** Mean of the numeric metrics. */
export const meanOf: Aggregate = (events) => {
  let sum = 0;
  let count = 0;
  for (const event of events) {
    const metric = metricOf(event);
    if (metric !== undefined) {
      sum += metric;
      count += 1;
    }
  }
  return count === 0 ? undefined : sum / count;
};
/** Largest numeric metric. */
export const maxOf: Aggregate = (events) => metrics(events, Math.max);
/** Smallest numeric metric. */
export const minOf: Aggregate = (events) => metrics(events, Math.min);
/**
 * Sum of the metrics ÷ the time span (largest − smallest time) in seconds; the sum itself when the
 * span is 0 (every event at one time, or fewer than two times), as Mirabelle's coll-rate.
 */
export const rateOf: Aggregate = (events) => {
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const event of events) {
    const time = timeOf(event);
    if (time === undefined) continue;
    if (time < first) first = time;
    if (time > last) last = time;
  }
  const sum = sumOf(events);
  if (sum === undefined) return undefined;
  return last > first ? sum / (last - first) : sum;
};

/**
 * Applies an aggregate to a list: the most recent event with `metric` set, or `undefined` for an
 * empty list or when the aggregate has no value.
 */
export function aggregateEvent(events: readonly Event[], aggregate: Aggregate): Event | undefined {
  if (events.length === 0) return undefined;
  const metric = aggregate(events);
  return metric === undefined ? undefined : { ...mostRecent(events), metric };
}

/**
 * @param empty what an empty list gives (coll-count's `{:metric 0}`); nothing when undefined
 */
function collection(action: string, aggregate: Aggregate, empty?: () => Event): ActionDefinition {
  return {
    compile(params, children, path) {
      expectCount(params, 0, 0, path, action, "");
      // Counts itself (`counting`): one increment per list rather than the compiler's wrapper call.
      return counting(action, children, (next, drop, _limits, counter) => {
        return (value) => {
          counter.count++;
          if (!Array.isArray(value)) {
            drop();
            return;
          }
          if (value.length === 0) {
            if (empty !== undefined) next(empty());
            return;
          }
          const event = aggregateEvent(value, aggregate);
          if (event === undefined) drop();
          else next(event);
        };
      });
    },
  };
}

/** `coll-count`: metric = number of events; an empty list gives `{:metric 0}`. */
export const collCount = collection("coll-count", countOf, () => ({ metric: 0 }));
export const collSum = collection("coll-sum", sumOf);
export const collMean = collection("coll-mean", meanOf);
export const collMax = collection("coll-max", maxOf);
export const collMin = collection("coll-min", minOf);
export const collRate = collection("coll-rate", rateOf);

/** `coll-where [condition]`: list → the list of the events matching the condition. */
export const collWhere: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "coll-where", "[condition]");
    const matches = compileCondition(params[0], `${path}.params[0]`);
    return withChildren("coll-where", children, (next, drop) => {
      return (value) => {
        if (Array.isArray(value)) next(value.filter(matches));
        else drop();
      };
    });
  },
};

/**
 * An action on lists: `apply` receives each list with the joined children and the drop counter; a
 * single event cannot be treated as a list and is counted as dropped.
 */
function onLists(
  action: string,
  children: readonly Builder[],
  apply: (events: readonly Event[], next: Next, drop: () => void) => void,
): Builder {
  return counting(action, children, (next, drop, _limits, counter) => (value) => {
    counter.count++;
    if (Array.isArray(value)) apply(value, next, drop);
    else drop();
  });
}

/** An event whose metric is a finite number. */
type Metered = Event & { readonly metric: number };

function isMetered(event: Event): event is Metered {
  return metricOf(event) !== undefined;
}

const byMetricAscending = (a: Metered, b: Metered): number => a.metric - b.metric;
const byMetricDescending = (a: Metered, b: Metered): number => b.metric - a.metric;

/**
 * The events of a list that have a numeric metric, sorted by metric, in a new array (the list is
 * shared with the window's other children). `Array.prototype.sort` is stable, so ties keep the
 * list order.
 */
function sortedByMetric(events: readonly Event[], order: (a: Metered, b: Metered) => number): Metered[] {
  return events.filter(isMetered).sort(order);
}

/**
 * `coll-percentiles [[q ...]]`: list → one event per quantile q (a number in [0, 1]), in param
 * order, by nearest rank (Riemann's and Mirabelle's `sorted-sample`): over the n events with a
 * numeric metric sorted by metric (stable), the event at index min(n − 1, floor(n·q)), copied with
 * `:quantile` = q. `[0 0.5 1]` on metrics 3, 1, 2 gives the events of metric 1, 2, 3.
 *
 * Dropped: a single event, and a non-empty list without any numeric metric. An empty list emits
 * nothing.
 * @throws CompileError when the param is not a non-empty vector of numbers in [0, 1]
 */
export const collPercentiles: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "coll-percentiles", "[[q ...]]");
    const items = sequenceItems(params[0]);
    if (items === undefined || items.length === 0) {
      throw new CompileError(path, ":coll-percentiles takes a non-empty vector of quantiles such as [0.5 0.99]");
    }
    const quantiles = items.map((item) => {
      const q = numberParam(item, path, "each quantile of :coll-percentiles");
      if (q < 0 || q > 1) throw new CompileError(path, "each quantile of :coll-percentiles must be between 0 and 1");
      return q;
    });
    return onLists("coll-percentiles", children, (events, next, drop) => {
      if (events.length === 0) return;
      const sorted = sortedByMetric(events, byMetricAscending);
      if (sorted.length === 0) {
        drop();
        return;
      }
      const last = sorted.length - 1;
      for (const quantile of quantiles) {
        const selected = sorted[Math.min(last, Math.floor(sorted.length * quantile))];
        if (selected !== undefined) next({ ...selected, quantile });
      }
    });
  },
};

function extremes(action: "coll-top" | "coll-bottom", order: (a: Metered, b: Metered) => number): ActionDefinition {
  return {
    compile(params, children, path) {
      expectCount(params, 1, 1, path, action, "[n]");
      const count = countParam(params[0], path, `n of :${action}`);
      return onLists(action, children, (events, next, drop) => {
        if (events.length === 0) return;
        const sorted = sortedByMetric(events, order);
        if (sorted.length === 0) {
          drop();
          return;
        }
        // The array is ours (sortedByMetric made it): truncating it saves a copy.
        if (sorted.length > count) sorted.length = count;
        next(sorted);
      });
    },
  };
}

/**
 * `coll-top [n]`: list → the list of the n events with the highest metric, highest first (ties in
 * list order); events without a numeric metric are left out; the whole list (sorted) when it holds
 * fewer than n.
 *
 * Dropped: a single event, and a non-empty list without any numeric metric. An empty list emits
 * nothing (where Mirabelle calls its children with nil).
 * @throws CompileError when n is not an integer ≥ 1
 */
export const collTop = extremes("coll-top", byMetricDescending);

/**
 * `coll-bottom [n]`: list → the list of the n events with the lowest metric, lowest first; as
 * {@link collTop} otherwise.
 */
export const collBottom = extremes("coll-bottom", byMetricAscending);

/**
 * `coll-sort [field]`: list → a new list sorted (stable) by the field, a keyword or a nested path
 * `[:a :b]` (Mirabelle takes only a keyword), in the order of {@link compareValues}: missing and
 * null first, then numbers, strings, booleans, the rest. An empty list gives an empty list, as in
 * Mirabelle.
 *
 * Dropped: a single event.
 * @throws CompileError when the field is not a keyword or a vector of keywords
 */
export const collSort: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 1, 1, path, "coll-sort", "[field]");
    const read = fieldReader(fieldParam(params[0], path, "coll-sort"));
    return onLists("coll-sort", children, (events, next) => {
      // slice: the list is shared with the window's other children, sort would reorder theirs.
      next(events.slice().sort((a, b) => compareValues(read(a), read(b))));
    });
  },
};

/**
 * `coll-quotient`: list → its most recent event ({@link mostRecent}) with metric = the first
 * event's metric ÷ the second's ÷ … in list order; a one-event list gives its own metric.
 *
 * Dropped: a single event; a list where an event has no numeric metric; a division by zero (where
 * Clojure throws) or a quotient too large for a number. An empty list emits nothing.
 */
export const collQuotient: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 0, 0, path, "coll-quotient", "");
    return onLists("coll-quotient", children, (events, next, drop) => {
      if (events.length === 0) return;
      let quotient: number | undefined;
      for (const event of events) {
        const metric = metricOf(event);
        if (metric === undefined || (quotient !== undefined && metric === 0)) {
          drop();
          return;
        }
        quotient = quotient === undefined ? metric : quotient / metric;
      }
      if (quotient === undefined || !Number.isFinite(quotient)) drop();
      else next({ ...mostRecent(events), metric: quotient });
    });
  },
};

/**
 * `coll-increase`: list of a counter's events → the newest event with metric = newest metric −
 * oldest metric, emitted only when > 0 (a flat counter or a reset emits nothing, and is not
 * counted). Newest = {@link mostRecent} (the largest time, the later in the list on ties);
 * oldest = the smallest time, the earlier in the list on ties. `[{:time 1 :metric 10} {:time 2
 * :metric 20} {:time 11 :metric 50}]` gives `{:time 11 :metric 40}`.
 *
 * Dropped: a single event; a list of one event; a list where an event lacks a numeric time or
 * metric. An empty list emits nothing, as for the other coll-* actions.
 */
export const collIncrease: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 0, 0, path, "coll-increase", "");
    return onLists("coll-increase", children, (events, next, drop) => {
      if (events.length === 0) return;
      if (events.length < 2) {
        drop();
        return;
      }
      // One pass: the oldest is the first of equal times (strict <), the newest the last (>=),
      // which is mostRecent's rule once every event is known to have a time.
      let newest: Event | undefined;
      let newestTime = Number.NEGATIVE_INFINITY;
      let newestMetric = 0;
      let oldestTime = Number.POSITIVE_INFINITY;
      let oldestMetric = 0;
      for (const event of events) {
        const time = timeOf(event);
        const metric = metricOf(event);
        if (time === undefined || metric === undefined) {
          drop();
          return;
        }
        if (time < oldestTime) {
          oldestTime = time;
          oldestMetric = metric;
        }
        if (time >= newestTime) {
          newest = event;
          newestTime = time;
          newestMetric = metric;
        }
      }
      const increase = newestMetric - oldestMetric;
      if (newest !== undefined && increase > 0) next({ ...newest, metric: increase });
    });
  },
};

/**
 * `sflatten`: list → each of its events, in order, one by one (unchanged). An empty list emits
 * nothing.
 *
 * Dropped: a single event (Mirabelle would iterate over the map's entries).
 */
export const sflatten: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 0, 0, path, "sflatten", "");
    return onLists("sflatten", children, (events, next) => {
      for (const event of events) next(event);
    });
  },
};
