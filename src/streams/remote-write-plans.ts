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
import { type RequestBytes, requestBytes } from "./remote-write-series-cache.js";

/** Requests larger than this many bytes (decoded) get no plan: its copy would take as much. */
export const PLANNED_REQUEST_BYTES = 4 * 1024 * 1024;
/** Plans kept, one per request length (a few shards of a few Prometheus): the oldest goes first. */
const KEPT_PLANS = 8;

/** The layout of a request: each series' template and the sample positions of each. */
export interface RequestPlan {
  /** The request's bytes; sample bytes are overwritten by each request tried against the plan. */
  readonly copy: RequestBytes;
  /** Per series, in order: the event its samples become (metric and time left to set). */
  readonly templates: readonly Event[];
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
 * The plans of one route's decoders, by request length. Every method is synchronous; a plan is
 * never changed once made, except the sample bytes of its copy.
 */
export class RequestPlans {
  readonly #plans = new Map<number, RequestPlan>();
  /** Requests in a row that matched no plan. */
  #misses = 0;

  /**
   * The plan whose request is `bytes` apart from the bytes of the samples: its sample bytes are
   * copied over the plan's copy, which must then equal `bytes` whole. A match is therefore exact:
   * every byte outside the samples is the planned request's (so are its series and labels), and
   * the samples are where the plan says.
   * @returns undefined when no plan matches
   */
  match(bytes: RequestBytes): RequestPlan | undefined {
    const plan = this.#matching(bytes);
    this.#misses = plan === undefined ? this.#misses + 1 : 0;
    return plan;
  }

  #matching(bytes: RequestBytes): RequestPlan | undefined {
    const plan = this.#plans.get(bytes.buffer.length);
    if (plan === undefined) return undefined;
    const copy = plan.copy.view;
    const view = bytes.view;
    const positions = plan.positions;
    for (let i = 0; i + 1 < positions.length; i += 2) {
      const end = positions[i + 1] ?? 0;
      let p = positions[i] ?? end;
      for (; p + 4 <= end; p += 4) copy.setUint32(p, view.getUint32(p));
      for (; p < end; p++) copy.setUint8(p, view.getUint8(p));
    }
    return plan.copy.buffer.equals(bytes.buffer) ? plan : undefined;
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
    if (!this.#plans.has(bytes.length) && this.#plans.size >= KEPT_PLANS) {
      const oldest = this.#plans.keys().next();
      if (oldest.done !== true) this.#plans.delete(oldest.value);
    }
    this.#plans.delete(bytes.length); // set again: the newest goes last
    this.#plans.set(bytes.length, {
      copy: requestBytes(Uint8Array.from(bytes)),
      templates: recorder.templates,
      seriesEnds: recorder.seriesEnds,
      positions: recorder.positions,
    });
    recorder.templates = [];
    recorder.seriesEnds = [];
    recorder.positions = [];
  }

  /** How many plans are kept. */
  get size(): number {
    return this.#plans.size;
  }
}
