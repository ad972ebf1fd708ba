/**
 * `percentiles`: quantiles of the metric per window of event time, from an
 * HdrHistogram (`hdr-histogram-js`, the pure-JavaScript port, as Mirabelle v0.13 uses the Java
 * HdrHistogram). One histogram per instance (per `by` fork), created at the instance's first event
 * and reused from window to window.
 *
 * Memory per instance is the histogram's counts array (32-bit counts), fixed by
 * `:highest-trackable-value` and `:nb-significant-digits`: for H = 10^6, about 8 KB at 2 digits,
 * 46 KB at 3 and 460 KB at 4 (10^9 at 3 digits: 87 KB; bench/streams.mjs measures it per fork).
 * Without `:highest-trackable-value` the array grows to cover the largest value recorded and
 * stays at that size. (The library's packed counts would take less memory, but reading a quantile
 * from them is thousands of times slower.)
 */
import type * as hdr from "hdr-histogram-js";
import { lazyLibrary } from "../../platform/lazy.js";
import { type ActionDefinition, withChildren } from "../action.js";
import { CompileError } from "../compile-error.js";
import { type EdnValue, sequenceItems } from "../edn.js";
import { type Event, metricOf, timeOf } from "../event.js";
import { countParam, expectCount, numberParam, optionsParam, secondsParam } from "./params.js";

/** hdr-histogram-js, loaded when a stream first uses percentiles (start-up skips it). */
const hdrHistogram = lazyLibrary<typeof hdr>("hdr-histogram-js");

/** The precisions HdrHistogram supports, in significant decimal digits (1 to 5 here; 0 is useless). */
type SignificantDigits = 1 | 2 | 3 | 4 | 5;

function isSignificantDigits(value: number): value is SignificantDigits {
  return value === 1 || value === 2 || value === 3 || value === 4 || value === 5;
}

/** The largest metric an auto-resizing histogram records: beyond, JavaScript numbers lose integers. */
const LARGEST_AUTO_VALUE = Number.MAX_SAFE_INTEGER;

/** The quantiles: a non-empty vector of numbers from 0 to 1. */
function quantilesParam(value: EdnValue | undefined, path: string): number[] {
  const quantiles = sequenceItems(value)?.map((item) =>
    typeof item === "number" || typeof item === "bigint" ? Number(item) : Number.NaN,
  );
  if (quantiles === undefined || quantiles.length === 0 || quantiles.some((q) => !(q >= 0 && q <= 1))) {
    throw new CompileError(path, ":percentiles must be a non-empty vector of numbers from 0 to 1");
  }
  return quantiles;
}

/**
 * `percentiles [{:duration D :percentiles [q ...] :delay L :highest-trackable-value H
 * :nb-significant-digits 3 :lowest-discernible-value V}]`: per window of D seconds of event time,
 * the value at each quantile q (0 to 1) of the metrics recorded in the window.
 *
 * The first event opens the first window at its time. An event whose time is more than D seconds
 * (strictly) after the window's start closes it: for each q, in param order, it emits a copy of
 * itself with `metric` = the histogram's value at quantile q and `quantile` = q; then the histogram
 * is reset, the event recorded, and the next window starts at its time. An event older than the
 * window's start − L (`:delay`, seconds, default 0) is dropped; any other event, late ones within
 * L included, is recorded in the current window.
 *
 * Values: HdrHistogram records non-negative integers, so each metric is truncated toward zero
 * (as Mirabelle's `recordValue(long)` does): 1.9 counts as 1. Scale fractional metrics first (for
 * example `scale [1000]` from seconds to milliseconds). The value at quantile q > 0 is the highest
 * value equivalent to the sample of rank ⌈q·n⌉ (at least 1) and at q = 0 the lowest; values up to
 * 2·10^digits are exact, larger ones within 10^−digits relative.
 *
 * Params: D > 0 seconds; L ≥ 0 seconds; H an integer ≥ 2 (given: a fixed range up to H, the memory
 * is allocated at the first event; absent: the range grows with the values, up to 2^53 − 1);
 * `:nb-significant-digits` an integer from 1 to 5 (default 3); `:lowest-discernible-value` an
 * integer ≥ 1 with H ≥ 2 × it, which needs H (Mirabelle's fixed-range recorder).
 *
 * Counted as dropped: a list, an event without time, an event without a finite metric ≥ 0, a
 * metric above H (fixed range) or above 2^53 − 1, and an event older than the window start − L.
 */
export const percentiles: ActionDefinition = {
  compile(params, children, path) {
    expectCount(
      params,
      1,
      1,
      path,
      "percentiles",
      "[{:duration D :percentiles [q ...] :delay L :highest-trackable-value H :nb-significant-digits 3}]",
    );
    const options = optionsParam(
      params[0],
      path,
      "percentiles",
      ["duration", "percentiles"],
      ["delay", "highest-trackable-value", "nb-significant-digits", "lowest-discernible-value"],
    );
    const duration = secondsParam(options.get("duration"), path, ":duration");
    const quantiles = quantilesParam(options.get("percentiles"), path);
    const delay = options.has("delay") ? numberParam(options.get("delay"), path, ":delay") : 0;
    if (delay < 0) throw new CompileError(path, ":delay must be a number of seconds of at least 0");
    const highest = options.has("highest-trackable-value")
      ? countParam(options.get("highest-trackable-value"), path, ":highest-trackable-value", 2)
      : undefined;
    if (highest !== undefined && highest > LARGEST_AUTO_VALUE) {
      throw new CompileError(path, `:highest-trackable-value must be at most ${LARGEST_AUTO_VALUE}`);
    }
    const digits = options.has("nb-significant-digits")
      ? countParam(options.get("nb-significant-digits"), path, ":nb-significant-digits")
      : 3;
    if (!isSignificantDigits(digits)) throw new CompileError(path, ":nb-significant-digits must be from 1 to 5");
    const lowest = options.has("lowest-discernible-value")
      ? countParam(options.get("lowest-discernible-value"), path, ":lowest-discernible-value")
      : 1;
    if (options.has("lowest-discernible-value")) {
      if (highest === undefined) {
        throw new CompileError(path, ":lowest-discernible-value needs :highest-trackable-value");
      }
      if (highest < 2 * lowest) {
        throw new CompileError(path, ":highest-trackable-value must be at least 2 × :lowest-discernible-value");
      }
    }
    const largest = highest ?? LARGEST_AUTO_VALUE;
    const request: hdr.BuildRequest =
      highest === undefined
        ? { bitBucketSize: 32, numberOfSignificantValueDigits: digits, autoResize: true, useWebAssembly: false }
        : {
            bitBucketSize: 32,
            lowestDiscernibleValue: lowest,
            highestTrackableValue: highest,
            numberOfSignificantValueDigits: digits,
            autoResize: false,
            useWebAssembly: false,
          };

    return withChildren("percentiles", children, (next, drop) => {
      // Created at the first event, so that a `by` fork costs nothing until it records.
      let histogram: hdr.Histogram | undefined;
      let windowStart: number | undefined;
      return (event) => {
        const time = Array.isArray(event) ? undefined : timeOf(event);
        const metric = Array.isArray(event) ? undefined : metricOf(event);
        // Checked before anything changes: a skipped event neither records nor closes a window.
        if (time === undefined || metric === undefined || metric < 0 || Array.isArray(event)) {
          drop();
          return;
        }
        const recorded = Math.trunc(metric);
        // Checked here rather than left to the library, which accepts values a little above H (up
        // to the end of H's bucket): the bound is the one configured.
        if (recorded > largest) {
          drop();
          return;
        }
        if (histogram === undefined) histogram = hdrHistogram().build(request);
        if (windowStart !== undefined && time > windowStart + duration) {
          const window = histogram;
          const emitted: Event[] = quantiles.map((quantile) => ({
            ...event,
            metric: window.getValueAtPercentile(quantile * 100),
            quantile,
          }));
          // The same histogram serves the next window: reset, not rebuilt.
          window.reset();
          window.recordValue(recorded);
          windowStart = time;
          for (const quantile of emitted) next(quantile);
          return;
        }
        if (windowStart === undefined) windowStart = time;
        else if (time < windowStart - delay) {
          drop();
          return;
        }
        histogram.recordValue(recorded);
      };
    });
  },
};
