/**
 * Layouts of whole remote write requests seen before. A Prometheus shard whose series do not change
 * sends, scrape after scrape, requests that differ only in the bytes of their samples: the same
 * series in the same order, each at the same offset. The layout of such a request (each series'
 * event template and where its samples are) is kept with a copy of its bytes; a later request of
 * the same length is recognised by copying its sample bytes over that copy and comparing the two
 * whole: one native comparison for the request instead of one per series, and no label or tag to
 * read. A request that differs anywhere else is decoded series by series, as any other.
 */
import type { Event } from "./event.js";
import { compactTemplate, type RequestBytes, requestBytes } from "./remote-write-series-cache.js";

/** Requests larger than this many bytes (decoded) get no plan: its copy would take as much. */
export const PLANNED_REQUEST_BYTES = 2 * 1024 * 1024;
/** Samples whose bytes are copied between two comparisons of what precedes them. */
const SAMPLES_PER_COMPARISON = 64;
/** Request lengths whose plans are kept (a few shards of a few Prometheus): the oldest goes first. */
const KEPT_LENGTHS = 8;
/** Plans kept per request length (shards whose requests happen to have the same length). */
const PLANS_PER_LENGTH = 2;

/** The layout of a request: each series' template and the sample positions of each. */
export interface RequestPlan {
  /** The request's bytes; sample bytes are overwritten by each request tried against the plan. */
  readonly copy: RequestBytes;
  /**
   * Per series, in order: the event its samples become (metric and time left to set), made compact
   * ({@link compactTemplates}) when the plan is first matched.
   */
  readonly templates: Event[];
  /** Whether {@link templates} were made compact. */
  compact: boolean;
  /** Per series: the end of its slots in {@link positions} (each series starts where the last ended). */
  readonly seriesEnds: readonly number[];
  /** Start and end offsets of each sample, in pairs, series after series. */
  readonly positions: readonly number[];
}

/**
 * Records the layout of a request while it is decoded series by series, for {@link RequestPlans}.
 * Recording costs a few array writes per series; arrays are reused until a plan takes them.
 */
export class PlanRecorder {
  templates: Event[] = [];
  seriesEnds: number[] = [];
  positions: number[] = [];
  /** Whether the request being decoded is recorded (false once a series disqualifies it). */
  recording = false;

  /** Starts recording a request (or not, when `record` is false). */
  start(record: boolean): void {
    this.recording = record;
    if (this.templates.length > 0) {
      this.templates.length = 0;
      this.seriesEnds.length = 0;
      this.positions.length = 0;
    }
  }

  /** Notes a series: its template and its first `slots` sample positions of `positions`. */
  series(template: Event, positions: readonly number[], slots: number): void {
    this.templates.push(template);
    for (let i = 0; i < slots; i++) this.positions.push(positions[i] ?? 0);
    this.seriesEnds.push(this.positions.length);
  }
}

/**
 * The plans of one route's decoders, by request length, the latest matched first. Every method is
 * synchronous; a plan is never changed once made, except the sample bytes of its copy.
 */
export class RequestPlans {
  readonly #plans = new Map<number, RequestPlan[]>();
  /** Requests in a row that matched no plan. */
  #misses = 0;

  /**
   * The plan whose request is `bytes` apart from the bytes of the samples: its sample bytes are
   * copied over the plan's copy, which must then equal `bytes` whole. A match is therefore exact:
   * every byte outside the samples is the planned request's (so are its series and labels), and
   * the samples are where the plan says. The templates of a plan matched for the first time are
   * made compact ({@link compactTemplates}).
   * @returns undefined when no plan matches
   */
  match(bytes: RequestBytes): RequestPlan | undefined {
    const plans = this.#plans.get(bytes.buffer.length);
    if (plans !== undefined) {
      for (let i = 0; i < plans.length; i++) {
        const plan = plans[i];
        if (plan === undefined || !matches(plan, bytes)) continue;
        // The latest matched first: the other one (if any) is the first evicted.
        plans[i] = plans[0] ?? plan;
        plans[0] = plan;
        this.#misses = 0;
        if (!plan.compact) compactTemplates(plan);
        return plan;
      }
    }
    this.#misses++;
    return undefined;
  }

  /**
   * Whether a request of `length` bytes that matched no plan is worth recording: after 1, 2, 4, 8 …
   * requests in a row that matched none, so that requests whose layout never repeats do not each
   * pay a copy of their bytes.
   */
  wants(length: number): boolean {
    const misses = this.#misses;
    return length <= PLANNED_REQUEST_BYTES && (misses & (misses - 1)) === 0;
  }

  /** Makes a plan of the request `bytes` from what `recorder` noted while decoding it. */
  add(bytes: Uint8Array, recorder: PlanRecorder): void {
    const length = bytes.length;
    const plans = this.#plans.get(length) ?? [];
    if (plans.length === 0 && this.#plans.size >= KEPT_LENGTHS) {
      const oldest = this.#plans.keys().next();
      if (oldest.done !== true) this.#plans.delete(oldest.value);
    }
    if (plans.length >= PLANS_PER_LENGTH) plans.pop();
    plans.unshift({
      copy: requestBytes(Uint8Array.from(bytes)),
      templates: recorder.templates,
      compact: false,
      seriesEnds: recorder.seriesEnds,
      positions: recorder.positions,
    });
    this.#plans.delete(length); // set again: the newest length goes last
    this.#plans.set(length, plans);
    recorder.templates = [];
    recorder.seriesEnds = [];
    recorder.positions = [];
  }
}

/**
 * Makes the templates of a plan compact ({@link compactTemplate}), once: a plan matched once is
 * likely to be matched request after request, and each of its events is copied from a template.
 * Templates are shared by plans and the series cache: each gets its own compact copy.
 */
export function compactTemplates(plan: RequestPlan): void {
  const templates = plan.templates;
  const copies = new Map<Event, Event>();
  for (let i = 0; i < templates.length; i++) {
    const template = templates[i];
    if (template === undefined) continue;
    let copy = copies.get(template);
    if (copy === undefined) {
      copy = compactTemplate(template);
      copies.set(template, copy);
    }
    templates[i] = copy;
  }
  plan.compact = true;
}

/**
 * Whether `bytes` is the request of `plan` but for the bytes of its samples, copied over the plan's
 * copy as it goes.
 */
function matches(plan: RequestPlan, bytes: RequestBytes): boolean {
  const copy = plan.copy;
  const view = bytes.view;
  const positions = plan.positions;
  // Compared a chunk of samples at a time: a request that differs early costs little.
  let compared = 0;
  for (let i = 0; i + 1 < positions.length; i += 2) {
    const end = positions[i + 1] ?? 0;
    let p = positions[i] ?? end;
    // Eight bytes at a time: the bits of a double are copied as they are (a copy that changed a
    // NaN's would only make the comparison fail, never succeed wrongly).
    for (; p + 8 <= end; p += 8) copy.view.setFloat64(p, view.getFloat64(p, true), true);
    for (; p + 4 <= end; p += 4) copy.view.setUint32(p, view.getUint32(p));
    for (; p < end; p++) copy.view.setUint8(p, view.getUint8(p));
    if (i % (2 * SAMPLES_PER_COMPARISON) === 0) {
      if (bytes.buffer.compare(copy.buffer, compared, end, compared, end) !== 0) return false;
      compared = end;
    }
  }
  const length = bytes.buffer.length;
  return bytes.buffer.compare(copy.buffer, compared, length, compared, length) === 0;
}
