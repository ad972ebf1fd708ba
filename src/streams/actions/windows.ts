/**
 * Windows: fixed-time-window, fixed-event-window, moving-event-window,
 * moving-time-window, the fixed windows that emit one event each (sum, mean, top, bottom, rate),
 * and the phase-2 fixed windows ssort (each window's events sorted by a field) and ratio (the
 * ratio of two conditions' counts per window). Every clock is event time (seconds).
 */
import { type ActionDefinition, type Builder, counting, type Next, onEvents } from "../action.js";
import { CompileError } from "../compile-error.js";
import { compileCondition, compileField } from "../condition.js";
import { type EdnValue, sequenceItems } from "../edn.js";
import { compareValues, type Event, fieldReader, metricOf, timeOf } from "../event.js";
import { type Aggregate, aggregateEvent, maxOf, meanOf, minOf, mostRecent, sumOf } from "./collections.js";
import { countParam, numberParam, secondsParam, soleOptionsParam } from "./params.js";

interface Window {
  readonly index: number;
  readonly events: Event[];
}

/**
 * The state of fixed time windows `[k·D, (k+1)·D)`, aligned on the Unix epoch. A window closes when
 * an event at or after its end + delay arrives. An event of the latest event's window (or a later
 * one) always joins its window, in whatever order it comes; when a delay is given, an event of an
 * earlier window still open joins it only when its time ≥ the latest time seen − delay (Mirabelle
 * v0.13's `aggregation*`), so a window being kept open for stragglers does not take arbitrarily old
 * ones.
 */
class FixedTimeWindows {
  /** Open windows, oldest first; usually one, more only with a delay. */
  readonly #open: Window[] = [];
  /** Windows with an index below this one are closed. */
  #closedBelow = Number.NEGATIVE_INFINITY;
  #maxTime = Number.NEGATIVE_INFINITY;
  /** The window of {@link #maxTime}. */
  #latestIndex = Number.NEGATIVE_INFINITY;

  constructor(
    readonly duration: number,
    /** Seconds; `undefined` when the action gave no `:delay` (0 for closing, no lateness check). */
    readonly delay: number | undefined,
    /** The most events one window holds (`streams.max-window-events`). */
    readonly maxEvents: number,
    readonly emit: (events: Event[]) => void,
  ) {}

  /** @returns false when the event is too late for its window, its window is full, or it has no time */
  add(event: Event): boolean {
    const time = timeOf(event);
    if (time === undefined) return false;
    const index = Math.floor(time / this.duration);
    if (index < this.#closedBelow) return false;
    if (this.delay !== undefined && time < this.#maxTime - this.delay && index < this.#latestIndex) return false;
    const open = this.#open;
    const last = open[open.length - 1];
    if (last !== undefined && last.index === index) {
      if (last.events.length >= this.maxEvents) return false;
      last.events.push(event);
    } else if (!this.#insert(index, event)) return false;
    if (time > this.#maxTime) {
      this.#maxTime = time;
      this.#latestIndex = index;
      const closedBelow = Math.floor((time - (this.delay ?? 0)) / this.duration);
      if (closedBelow > this.#closedBelow) {
        this.#closedBelow = closedBelow;
        for (let first = open[0]; first !== undefined && first.index < closedBelow; first = open[0]) {
          open.shift();
          this.emit(first.events);
        }
      }
    }
    return true;
  }

  /** @returns false when the event's window is full */
  #insert(index: number, event: Event): boolean {
    const open = this.#open;
    let position = open.length;
    let existing = open[position - 1];
    while (existing !== undefined && existing.index > index) {
      position -= 1;
      existing = open[position - 1];
    }
    if (existing === undefined || existing.index !== index) open.splice(position, 0, { index, events: [event] });
    else if (existing.events.length >= this.maxEvents) return false;
    else existing.events.push(event);
    return true;
  }
}

/**
 * Fixed time windows without `:delay`, the common case: FixedTimeWindows' rules with a delay of 0
 * leave only the latest event's window open (an event of a later window closes it, an event of an
 * earlier one is too late), so that window is kept in two fields, without the list of open windows
 * to search, splice and shift for each window.
 */
class LatestTimeWindow {
  /** The open window's index, −∞ before the first event. */
  #index = Number.NEGATIVE_INFINITY;
  /** The open window's events; empty before the first event. */
  #events: Event[] = [];

  constructor(
    readonly duration: number,
    /** The most events one window holds (`streams.max-window-events`). */
    readonly maxEvents: number,
    readonly emit: (events: Event[]) => void,
  ) {}

  /** @returns false when the event is too late for its window, its window is full, or it has no time */
  add(event: Event): boolean {
    const time = timeOf(event);
    if (time === undefined) return false;
    const index = Math.floor(time / this.duration);
    if (index === this.#index) {
      // Whatever its time, an event of the latest window joins it (Mirabelle v0.13).
      const events = this.#events;
      if (events.length >= this.maxEvents) return false;
      events.push(event);
      return true;
    }
    if (index < this.#index) return false;
    const closed = this.#events;
    // The new window is in place before the closed one is emitted, as FixedTimeWindows does.
    this.#events = [event];
    this.#index = index;
    if (closed.length > 0) this.emit(closed);
    return true;
  }
}

/** The keys a fixed-time action takes besides `:duration` and `:delay`. */
interface WindowKeys {
  /** How the params read, for the error on a wrong count. */
  readonly shape: string;
  readonly required: readonly string[];
  readonly optional: readonly string[];
}

/**
 * The options of a fixed time window: `{:duration D :delay L}` plus the action's own keys.
 * @returns the duration and delay in seconds (`delay` is `undefined` when not given) and every option
 * @throws CompileError naming the node for a missing, unknown or invalid option
 */
function windowOptions(
  params: readonly EdnValue[],
  path: string,
  action: string,
  { shape, required, optional }: WindowKeys = { shape: "[{:duration D :delay L}]", required: [], optional: [] },
): { duration: number; delay: number | undefined; options: Map<string, EdnValue> } {
  const options = soleOptionsParam(params, path, action, shape, ["duration", ...required], ["delay", ...optional]);
  const duration = secondsParam(options.get("duration"), path, ":duration");
  const delay = options.has("delay") ? numberParam(options.get("delay"), path, ":delay") : undefined;
  if (delay !== undefined && delay < 0)
    throw new CompileError(path, ":delay must be a number of seconds of at least 0");
  return { duration, delay, options };
}

function timeWindowBuilder(
  action: string,
  duration: number,
  delay: number | undefined,
  children: readonly Builder[],
  toOutput: (events: Event[], next: Next, drop: () => void) => void,
): Builder {
  return counting(action, children, (next, drop, limits, counter) => {
    const emit = (events: Event[]) => toOutput(events, next, drop);
    const windows =
      delay === undefined
        ? new LatestTimeWindow(duration, limits.windowEvents, emit)
        : new FixedTimeWindows(duration, delay, limits.windowEvents, emit);
    return (value) => {
      counter.count++;
      if (Array.isArray(value) || !windows.add(value)) drop();
    };
  });
}

/** `fixed-time-window [{:duration D :delay L}]`: emits the list of events of each window. */
export const fixedTimeWindow: ActionDefinition = {
  compile(params, children, path) {
    const { duration, delay } = windowOptions(params, path, "fixed-time-window");
    return timeWindowBuilder("fixed-time-window", duration, delay, children, (events, next) => next(events));
  },
};

function aggregatingWindow(action: string, aggregate: Aggregate): ActionDefinition {
  return {
    compile(params, children, path) {
      const { duration, delay } = windowOptions(params, path, action);
      return timeWindowBuilder(action, duration, delay, children, (events, next, drop) => {
        const event = aggregateEvent(events, aggregate);
        if (event === undefined) drop();
        else next(event);
      });
    },
  };
}

/** `sum [{:duration D}]`: one event per window, metric = sum of the metrics. */
export const sum = aggregatingWindow("sum", sumOf);
/** `mean [{:duration D}]`: metric = mean. */
export const mean = aggregatingWindow("mean", meanOf);
/** `top [{:duration D}]`: metric = max. */
export const top = aggregatingWindow("top", maxOf);
/** `bottom [{:duration D}]`: metric = min. */
export const bottom = aggregatingWindow("bottom", minOf);

/** `rate [{:duration D}]`: metric = number of events ÷ D (events per second). */
export const rate: ActionDefinition = {
  compile(params, children, path) {
    const { duration, delay } = windowOptions(params, path, "rate");
    const perSecond: Aggregate = (events) => events.length / duration;
    return timeWindowBuilder("rate", duration, delay, children, (events, next) => {
      const event = aggregateEvent(events, perSecond);
      if (event !== undefined) next(event);
    });
  },
};

/** The most events an event window may hold: a window never grows without bound. */
export const MAX_EVENT_WINDOW_SIZE = 1_000_000;

/** The `:size` of an event window, its one param: an integer from 1 to {@link MAX_EVENT_WINDOW_SIZE}. */
function eventWindowSize(params: readonly EdnValue[], path: string, action: string): number {
  const options = soleOptionsParam(params, path, action, "[{:size n}]", ["size"]);
  const size = countParam(options.get("size"), path, ":size");
  if (size > MAX_EVENT_WINDOW_SIZE) throw new CompileError(path, `:size must be at most ${MAX_EVENT_WINDOW_SIZE}`);
  return size;
}

function eventWindow(action: "fixed-event-window" | "moving-event-window"): ActionDefinition {
  return {
    compile(params, children, path) {
      const size = eventWindowSize(params, path, action);
      return onEvents(action, children, (next) => {
        let buffer: Event[] = [];
        if (action === "fixed-event-window") {
          return (event) => {
            buffer.push(event);
            if (buffer.length === size) {
              const full = buffer;
              buffer = [];
              next(full);
            }
          };
        }
        return (event) => {
          // A new array each time: children may keep the list they received.
          buffer = buffer.length < size ? [...buffer, event] : [...buffer.slice(1), event];
          next(buffer);
        };
      });
    },
  };
}

/** `fixed-event-window [{:size n}]`: emits every n events as a list. */
export const fixedEventWindow = eventWindow("fixed-event-window");
/** `moving-event-window [{:size n}]`: on every event emits the last n events. */
export const movingEventWindow = eventWindow("moving-event-window");

/** `moving-time-window [{:duration D}]`: on every event emits the events of the last D seconds. */
export const movingTimeWindow: ActionDefinition = {
  compile(params, children, path) {
    const options = soleOptionsParam(params, path, "moving-time-window", "[{:duration D}]", ["duration"]);
    const duration = secondsParam(options.get("duration"), path, ":duration");
    return onEvents("moving-time-window", children, (next, drop, limits) => {
      let buffer: Event[] = [];
      let clock = Number.NEGATIVE_INFINITY;
      return (event) => {
        const time = timeOf(event);
        if (time === undefined) {
          drop();
          return;
        }
        if (time > clock) clock = time;
        const horizon = clock - duration;
        // Every event kept has a time.
        const kept = buffer.filter((held) => (timeOf(held) ?? horizon) > horizon);
        if (time > horizon) kept.push(event);
        // Bounded by `streams.max-window-events`: the oldest events go first, counted as dropped.
        if (kept.length > limits.windowEvents) {
          for (let excess = kept.length - limits.windowEvents; excess > 0; excess--) drop();
          kept.splice(0, kept.length - limits.windowEvents);
        }
        buffer = kept;
        next(buffer);
      };
    });
  },
};

/**
 * `ssort [{:duration D :field f :delay L}]`: buffers the epoch-aligned fixed windows of
 * fixed-time-window (same `:delay` rule) and emits each closed window's events one by one, sorted
 * (stable) by the field (a keyword or a path) in the order of `compareValues` (missing and null
 * first). Windows closed by one event come out window by window, oldest first. Mirabelle's builder
 * writes `:nested?`: accepted and ignored, the field's shape says whether it is nested. Counted as
 * dropped: lists, events without time, events too late for their window, events beyond
 * `streams.max-window-events` in a window.
 */
export const ssort: ActionDefinition = {
  compile(params, children, path) {
    const { duration, delay, options } = windowOptions(params, path, "ssort", {
      shape: "[{:duration D :field f :delay L}]",
      required: ["field"],
      optional: ["nested?"],
    });
    const read = fieldReader(compileField(options.get("field"), `${path}.params[0]`));
    const byField = (a: Event, b: Event) => compareValues(read(a), read(b));
    return timeWindowBuilder("ssort", duration, delay, children, (events, next) => {
      // The closed window's array belongs to no one else: sorting it in place is safe.
      events.sort(byField);
      for (const event of events) next(event);
    });
  },
};

/**
 * `ratio [{:duration D :conditions [c1 c2] :metric false :delay L}]`: over the epoch-aligned fixed
 * windows of fixed-time-window (same `:delay` rule), emits per closed window its most recent event
 * with metric = (number of events matching c1) ÷ (number matching c2), or with `:metric true` the
 * sums of their metrics (a missing or non-numeric metric counts 0); 0 when the divisor is 0. The
 * conditions are tested independently (an event may count for both); a window whose events match
 * neither emits 0. Counted as dropped: as fixed-time-window.
 */
export const ratio: ActionDefinition = {
  compile(params, children, path) {
    const { duration, delay, options } = windowOptions(params, path, "ratio", {
      shape: "[{:duration D :conditions [c1 c2] :metric false :delay L}]",
      required: ["conditions"],
      optional: ["metric"],
    });
    const conditions = sequenceItems(options.get("conditions"));
    if (conditions === undefined || conditions.length !== 2) {
      throw new CompileError(path, ":conditions of :ratio must be a vector of exactly 2 conditions");
    }
    const dividend = compileCondition(conditions[0], `${path}.params[0].conditions[0]`);
    const divisor = compileCondition(conditions[1], `${path}.params[0].conditions[1]`);
    const useMetric = options.get("metric") ?? false;
    if (typeof useMetric !== "boolean") throw new CompileError(path, ":metric of :ratio must be true or false");
    const weight = useMetric ? (event: Event) => metricOf(event) ?? 0 : () => 1;
    return timeWindowBuilder("ratio", duration, delay, children, (events, next) => {
      let above = 0;
      let below = 0;
      for (const event of events) {
        if (dividend(event)) above += weight(event);
        if (divisor(event)) below += weight(event);
      }
      next({ ...mostRecent(events), metric: below === 0 ? 0 : above / below });
    });
  },
};
