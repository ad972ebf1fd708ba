/**
 * Actions on lists of events, as windows emit them (streams.md §4): coll-count, coll-sum,
 * coll-mean, coll-max, coll-min, coll-rate turn a list into one event, the most recent (largest
 * time; the last of the list when none has a time) with the metric replaced, its other fields kept
 * as they are (nulls included); coll-where filters a list. An empty list gives `{:metric 0}` from
 * coll-count and nothing from the others (Mirabelle v0.13).
 */
import { type ActionDefinition, withChildren } from "../action.js";
import { compileCondition } from "../condition.js";
import { type Event, metricOf, timeOf } from "../event.js";
import { expectCount } from "./params.js";

/** Reduces a list to a metric, or `undefined` when it cannot (no numeric metric, no time span). */
export type Aggregate = (events: readonly Event[]) => number | undefined;

/** The most recent event of a non-empty list: the largest time, the later one on ties. */
export function mostRecent(events: readonly Event[]): Event {
  let latest = events[events.length - 1] as Event;
  let latestTime = timeOf(latest) ?? Number.NEGATIVE_INFINITY;
  for (const event of events) {
    const time = timeOf(event);
    if (time !== undefined && time > latestTime) {
      latest = event;
      latestTime = time;
    }
  }
  return latest;
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
      return withChildren(action, children, (next, drop) => {
        return (value) => {
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
