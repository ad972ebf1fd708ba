/**
 * Actions that remember events across pushes: project, coalesce, stable, smax and smin. Every clock
 * is event time in seconds; state lives in each instance (one per `by` fork), never in globals.
 * Where docs/streams.md is silent, Mirabelle v0.13 decides (its `action_test.clj` and
 * `stream_test.clj`).
 *
 * Each instance updates its state before calling its children, so that a child reinjecting into
 * the same stream (and so re-entering the instance) sees a consistent state.
 */
import { type ActionDefinition, onEvents, withChildren } from "../action.js";
import { compileField } from "../condition.js";
import { type Event, type FieldReader, fieldReader, isExpired, metricOf, timeOf, valuesEqual } from "../event.js";
import { conditionsParam, expectCount, itemsParam, secondsParam, soleOptionsParam } from "./params.js";

/**
 * `project [[c1 c2 ...]]` (at least one condition): keeps one slot per condition holding the most
 * recent non-expired event that matched it, and on every event emits the list of the non-empty
 * slots in condition order; when every slot is empty it emits nothing (Mirabelle v0.13).
 *
 * The clock is the largest event time seen. An event with a time, not expired at the clock, fills
 * each slot whose condition it matches when the slot is empty or holds a strictly older event (on
 * a time tie the occupant stays). An event without time, or expired at the clock, only empties the
 * slots whose event has expired; it still triggers the emission. Expired slots are emptied before
 * an event fills them, so an older non-expired event can take a slot whose occupant expired (and
 * a slot emptied this way is reused, unlike Mirabelle's, which loses it for good).
 *
 * Counted as dropped: a list (from a window).
 */
export const project: ActionDefinition = {
  compile(params, children, path) {
    const conditions = conditionsParam(params, path, "project", ":project takes a non-empty vector of conditions");
    return onEvents("project", children, (next) => {
      /** One slot per condition: the event and its time (only events with a time are stored). */
      const slots: Array<{ readonly event: Event; readonly time: number } | undefined> = conditions.map(
        () => undefined,
      );
      let clock = Number.NEGATIVE_INFINITY;
      return (event) => {
        const time = timeOf(event);
        if (time !== undefined && time > clock) clock = time;
        const fills = time !== undefined && !isExpired(event, clock);
        const projection: Event[] = [];
        for (const [i, condition] of conditions.entries()) {
          let slot = slots[i];
          if (slot !== undefined && isExpired(slot.event, clock)) slot = undefined;
          if (fills && (slot === undefined || time > slot.time) && condition(event)) slot = { event, time };
          slots[i] = slot;
          if (slot !== undefined) projection.push(slot.event);
        }
        if (projection.length > 0) next(projection);
      };
    });
  },
};

/**
 * The key of a tuple of field values: each value tagged with its type and length, so that a
 * missing value, `null`, the number 1 and the string "1" give different keys and no string can
 * imitate a separator. Objects and arrays are keyed by their JSON text.
 */
function tupleKey(readers: readonly FieldReader[], event: Event): string {
  let key = "";
  for (const read of readers) {
    const value = read(event);
    if (value === undefined) key += "u;";
    else if (typeof value === "string") key += `s${value.length}:${value}`;
    else {
      const text = JSON.stringify(value) ?? "";
      key += `j${text.length}:${text}`;
    }
  }
  return key;
}

/**
 * `coalesce [{:duration D :fields [f ...]}]`: keeps the latest event per tuple of the fields'
 * values (keywords or paths; a missing value is part of the tuple), and every D seconds of event
 * time emits the list of the kept events that have not expired (in the order their keys first
 * arrived).
 *
 * The clock is the largest event time seen. The first event sets the tick. An event replaces the
 * one kept under its key unless that one is strictly newer. When the clock reaches tick + D, the
 * entries expired at the clock are dropped, the event is stored, the list is emitted and the tick
 * becomes the clock.
 *
 * Counted as dropped: a list, an event without time, an event already expired at the clock (it
 * has no effect, not even on the clock, as in Mirabelle v0.13), and an event whose new key would
 * take more than `streams.max-window-events` entries (it still moves the clock and can trigger
 * the emission, so that expired entries keep being freed).
 */
export const coalesce: ActionDefinition = {
  compile(params, children, path) {
    const shape = "[{:duration D :fields [f ...]}]";
    const options = soleOptionsParam(params, path, "coalesce", shape, ["duration", "fields"]);
    const duration = secondsParam(options.get("duration"), path, ":duration");
    const fields = itemsParam(options.get("fields"), path, ":fields of :coalesce must be a non-empty vector of fields");
    const readers = fields.map((field, index) =>
      fieldReader(compileField(field, `${path}.params[0].fields[${index}]`)),
    );
    return withChildren("coalesce", children, (next, drop, limits) => {
      /** The kept events by key; a Map keeps the order in which keys first arrived. */
      const kept = new Map<string, Event>();
      let clock = Number.NEGATIVE_INFINITY;
      let tick: number | undefined;
      return (event) => {
        const time = Array.isArray(event) ? undefined : timeOf(event);
        // The second test narrows the type: a list has no time.
        if (time === undefined || Array.isArray(event)) {
          drop();
          return;
        }
        const now = time > clock ? time : clock;
        if (isExpired(event, now)) {
          drop();
          return;
        }
        clock = now;
        if (tick === undefined) tick = time;
        const due = clock >= tick + duration;
        // Expired entries go before the event is stored, so that the bound counts only live ones.
        if (due) for (const [key, stored] of kept) if (isExpired(stored, clock)) kept.delete(key);
        const key = tupleKey(readers, event);
        const stored = kept.get(key);
        if (stored === undefined) {
          if (kept.size < limits.windowEvents) kept.set(key, event);
          else drop();
        } else if ((timeOf(stored) ?? Number.NEGATIVE_INFINITY) <= time) {
          // On a time tie the new event wins (Mirabelle v0.13).
          kept.set(key, event);
        }
        if (due) {
          tick = clock;
          if (kept.size > 0) next([...kept.values()]);
        }
      };
    });
  },
};

/**
 * `stable [D field]` (D > 0 seconds; the field a keyword or a path): lets events through once the
 * field has kept one value for more than D seconds. Events are buffered while the value holds;
 * when an event with that value arrives more than D seconds after the value first appeared, the
 * buffer and the event are emitted one by one in arrival order, and later events of that value
 * pass directly. A value change discards the buffer and starts buffering the new value (Mirabelle
 * v0.13). A missing field is a value like any other (Clojure's nil, equal to null).
 *
 * Counted as dropped: a list, an event without time, an event older than the largest time seen
 * (an equal time is accepted), and an event beyond `streams.max-window-events` in the buffer.
 */
export const stable: ActionDefinition = {
  compile(params, children, path) {
    expectCount(params, 2, 2, path, "stable", "[D field]");
    const duration = secondsParam(params[0], `${path}.params[0]`, "D");
    const read = fieldReader(compileField(params[1], `${path}.params[1]`));
    return onEvents("stable", children, (next, drop, limits) => {
      let started = false;
      let current: unknown;
      /** When the current value first appeared (seconds). */
      let since = 0;
      let maxTime = Number.NEGATIVE_INFINITY;
      let buffer: Event[] = [];
      /** Whether the current value has held long enough: its events pass directly. */
      let open = false;
      return (event) => {
        const time = timeOf(event);
        if (time === undefined || time < maxTime) {
          drop();
          return;
        }
        maxTime = time;
        const field = read(event) ?? null;
        if (!started || !valuesEqual(field, current)) {
          started = true;
          current = field;
          since = time;
          buffer = [event];
          open = false;
        } else if (open) next(event);
        else if (time > since + duration) {
          const held = buffer;
          buffer = [];
          open = true;
          for (const buffered of held) next(buffered);
          next(event);
        } else if (buffer.length < limits.windowEvents) buffer.push(event);
        else drop();
      };
    });
  },
};

/**
 * smax / smin: on every event with a numeric metric, emits the event with the largest / smallest
 * metric seen so far (strictly: on a tie the earlier event stays). Counted as dropped: a list, an
 * event without a numeric metric.
 */
function extremum(action: "smax" | "smin"): ActionDefinition {
  return {
    compile(params, children, path) {
      expectCount(params, 0, 0, path, action, "");
      const better = action === "smax" ? (a: number, b: number) => a > b : (a: number, b: number) => a < b;
      return onEvents(action, children, (next, drop) => {
        let best: Event | undefined;
        let bestMetric = 0;
        return (event) => {
          const metric = metricOf(event);
          if (metric === undefined) {
            drop();
            return;
          }
          if (best === undefined || better(metric, bestMetric)) {
            best = event;
            bestMetric = metric;
          }
          next(best);
        };
      });
    },
  };
}

/** `smax`: on every event emits the event with the largest metric seen so far. */
export const smax = extremum("smax");
/** `smin`: on every event emits the event with the smallest metric seen so far. */
export const smin = extremum("smin");
