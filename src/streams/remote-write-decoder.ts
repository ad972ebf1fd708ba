/**
 * A decoder of Prometheus remote write 1.0 `WriteRequest` messages (protobuf, after snappy
 * decompression) straight into stream events: one event per sample, every label a
 * top-level field with its string value, `__name__` as `service`, the sample value as `metric`, the
 * timestamp (milliseconds) as `time` in seconds. Staleness markers are skipped. Series come in
 * request order, samples in series order.
 *
 * Hand-written for this one hot path: it builds no intermediate message objects, reuses labels
 * across series and requests, and reads samples in place. A request laid out as one decoded before
 * (the same bytes but for its samples') is not read series by series: its samples are read where
 * they were ({@link RequestPlans}). `proto/remote-write.proto` is the
 * schema; a differential test checks this decoder against protobufjs on varied inputs.
 */
import type { Event } from "./event.js";
import { type EventBound, type EventBounds, EventMeter } from "./event-bounds.js";
import { FIXED32, FIXED64, LENGTH_DELIMITED, VARINT } from "./protobuf-wire.js";
import { PlanRecorder, type RequestPlan, RequestPlans } from "./remote-write-plans.js";
import { isStale, shortVarint } from "./remote-write-sample.js";
import {
  type CachedSeries,
  hashOf,
  LabelCache,
  leadingLabelsEnd,
  type RequestBytes,
  requestBytes,
  SeriesCache,
} from "./remote-write-series-cache.js";
import { TurnClock } from "./slices.js";

/** A body that is not a valid WriteRequest. */
export class RemoteWriteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RemoteWriteError";
  }
}

/** Sample positions (two per sample) kept between requests; a longer list is let go. */
const KEPT_SAMPLE_SLOTS = 4096;

/** Samples (or series) decoded between two looks at the clock, when decoding in slices. */
const SAMPLES_PER_CHECK = 1024;

/** Series of a request that were over an event bound: their samples, by bound. */
export type RefusedSamples = Map<EventBound, number>;

/** Bytes of the fields every sample's event has besides its labels: `metric` and `time`. */
const SAMPLE_FIELDS = ["metric", "time"].map((name) => name.length);
/** Bytes of the field `__name__` becomes. */
const SERVICE_BYTES = "service".length;

/**
 * Decodes WriteRequests; one instance keeps a cache of labels, so that the names and values that
 * repeat from one scrape to the next are decoded once. Not reentrant: a request decoded in slices
 * ({@link decodeSliced}) needs an instance of its own.
 *
 * With event bounds, each series is measured as the event its samples become (labels as fields,
 * `metric`, `time`); the samples of a series over a bound are not emitted but counted in
 * {@link refused}, and its labels past the bound are skipped, not decoded.
 */
export class RemoteWriteDecoder {
  // Labels by the 30-bit hash of their bytes; collisions are resolved by comparing bytes.
  #labels = new LabelCache();
  #seriesCache = new SeriesCache();
  #plans = new RequestPlans();
  readonly #recorder = new PlanRecorder();
  /** The plan the request being decoded matched, and the next of its series to emit. */
  #plan: RequestPlan | undefined;
  #planSeries = 0;
  /** The series decoded last in this request, whose successor is predicted to come next. */
  #previous: CachedSeries | undefined;
  readonly #meter: EventMeter | undefined;
  /** Samples of series over a bound in the last request, by bound (empty without bounds). */
  readonly refused: RefusedSamples = new Map();
  // Reused between series: where the samples of the current series are, the label just read.
  #samplePositions: number[] = [];
  /** How many entries of `#samplePositions` are the current series' (its length is never cut: that is a slow call). */
  #sampleSlots = 0;
  /** Where `#emitSamples` reads sample positions: `#samplePositions`, or the matched plan's. */
  #positions: readonly number[] = [];
  #labelName = "";
  #labelValue = "";
  #labelNameBytes = 0;
  #labelValueBytes = 0;
  #buffer: Uint8Array = new Uint8Array(0);
  #view: DataView = new DataView(new ArrayBuffer(0));
  #bytes: RequestBytes = requestBytes(new Uint8Array(0));
  #position = 0;
  #sampleValue = 0;
  /** Milliseconds since the Unix epoch. */
  #sampleTimestamp = 0;
  // The series whose samples are being emitted: its event, the next sample, the bound it exceeded.
  #template: Event = {};
  #nextSample = 0;
  #seriesBound: EventBound | undefined;
  #emitted = 0;

  constructor(bounds?: EventBounds) {
    this.#meter = bounds === undefined ? undefined : new EventMeter(bounds);
  }

  /**
   * A decoder of its own position sharing this one's caches and bounds: for a request decoded in
   * slices while this one decodes others.
   */
  fork(): RemoteWriteDecoder {
    const fork = new RemoteWriteDecoder(this.#meter?.bounds);
    fork.#labels = this.#labels;
    fork.#seriesCache = this.#seriesCache;
    fork.#plans = this.#plans;
    return fork;
  }

  /**
   * Decodes a WriteRequest and passes each event to `emit`, in order.
   * @returns the number of events emitted (staleness markers and refused samples excluded)
   * @throws RemoteWriteError when the bytes are not a valid WriteRequest
   */
  decode(buffer: Uint8Array, emit: (event: Event) => void): number {
    this.#begin(buffer);
    this.#next(Number.POSITIVE_INFINITY, emit);
    return this.#end();
  }

  /**
   * Decodes a WriteRequest as {@link decode} does, a slice per turn of the event loop: a request of
   * many megabytes (or one series of millions of samples) never holds the loop.
   * @throws RemoteWriteError when the bytes are not a valid WriteRequest (the events of the series
   *   before the error were emitted)
   */
  async decodeSliced(buffer: Uint8Array, emit: (event: Event) => void): Promise<number> {
    this.#begin(buffer);
    const clock = new TurnClock();
    while (!this.#next(SAMPLES_PER_CHECK, emit)) if (clock.due()) await clock.turn();
    return this.#end();
  }

  #begin(buffer: Uint8Array): void {
    this.#buffer = buffer;
    this.#bytes = requestBytes(buffer);
    this.#view = this.#bytes.view;
    this.#position = 0;
    this.#previous = undefined;
    this.#sampleSlots = 0;
    this.#nextSample = 0;
    this.#emitted = 0;
    this.refused.clear();
    this.#plan = this.#plans.match(this.#bytes);
    this.#planSeries = 0;
    this.#positions = this.#plan?.positions ?? this.#samplePositions;
    this.#recorder.start(this.#plan === undefined && this.#plans.wants(buffer.length));
  }

  #end(): number {
    if (this.#recorder.recording) this.#plans.add(this.#buffer, this.#recorder);
    this.#plan = undefined;
    // The positions of a series of very many samples are not kept until the next such series.
    if (this.#samplePositions.length > KEPT_SAMPLE_SLOTS) this.#samplePositions = [];
    this.#buffer = new Uint8Array(0);
    this.#bytes = requestBytes(this.#buffer);
    this.#view = this.#bytes.view;
    this.#template = {};
    this.#previous = undefined;
    return this.#emitted;
  }

  /**
   * Emits up to `limit` more samples, reading series as needed.
   * @returns true once the whole request is read
   */
  #next(limit: number, emit: (event: Event) => void): boolean {
    if (this.#plan !== undefined) return this.#replay(this.#plan, limit, emit);
    const end = this.#buffer.length;
    let budget = limit;
    for (;;) {
      if (this.#nextSample < this.#sampleSlots) {
        budget -= this.#emitSamples(budget, emit);
        if (budget <= 0) return this.#nextSample >= this.#sampleSlots && this.#position >= end;
      }
      if (this.#position >= end) return true;
      const tag = this.#varint32();
      if (tag >>> 3 === 1 && (tag & 7) === LENGTH_DELIMITED) {
        const length = this.#length(end);
        this.#series(this.#position + length);
        if (this.#recorder.recording) this.#record();
        budget -= 1; // a series of no samples still costs its labels
      } else {
        this.#skip(tag & 7, end);
      }
      if (budget <= 0) return false;
    }
  }

  /**
   * {@link #next} for a request that matched a plan: its series are the plan's, in order, with their
   * samples where the plan says; nothing else is read.
   */
  #replay(plan: RequestPlan, limit: number, emit: (event: Event) => void): boolean {
    const templates = plan.templates;
    let budget = limit;
    for (;;) {
      if (this.#nextSample < this.#sampleSlots) {
        budget -= this.#emitSamples(budget, emit);
        if (budget <= 0) return this.#nextSample >= this.#sampleSlots && this.#planSeries >= templates.length;
      }
      const series = this.#planSeries;
      const template = templates[series];
      if (template === undefined) return true;
      const first = series === 0 ? 0 : (plan.seriesEnds[series - 1] ?? 0);
      const last = plan.seriesEnds[series] ?? 0;
      this.#planSeries = series + 1;
      budget -= 1; // as in #next
      if (last - first === 2) {
        // One sample, as Prometheus sends each series: emitted here, without the loop's state.
        budget -= 1;
        if (this.#sample(plan.positions[first] ?? 0, plan.positions[first + 1] ?? 0)) this.#emit(template, emit);
      } else {
        this.#template = template;
        this.#seriesBound = undefined;
        this.#nextSample = first;
        this.#sampleSlots = last;
      }
      if (budget <= 0) return this.#nextSample >= this.#sampleSlots && this.#planSeries >= templates.length;
    }
  }

  /** Notes the series just read in the plan being recorded; a series over a bound stops the recording. */
  #record(): void {
    if (this.#seriesBound !== undefined) this.#recorder.recording = false;
    else this.#recorder.series(this.#template, this.#samplePositions, this.#sampleSlots);
  }

  /**
   * Reads a TimeSeries: its labels into the event template of its samples (from the series cache
   * when they were seen before), and where its samples are (not read yet).
   */
  #series(end: number): void {
    const start = this.#position;
    this.#sampleSlots = 0;
    this.#nextSample = 0;
    const cache = this.#seriesCache;
    const predicted = this.#previous?.next;
    let cached: CachedSeries | undefined;
    let labelsEnd = -1;
    if (predicted !== undefined && cache.opensWith(predicted, this.#bytes, start, end)) {
      cached = predicted;
      labelsEnd = start + predicted.length;
    } else {
      labelsEnd = leadingLabelsEnd(this.#buffer, start, end);
      if (labelsEnd >= 0) cached = cache.find(this.#bytes, start, labelsEnd);
    }
    if (cached !== undefined) {
      this.#position = labelsEnd;
      if (this.#samplesAfterLabels(end)) {
        this.#follow(cached);
        this.#template = cache.templateOf(cached);
        this.#seriesBound = undefined;
        return;
      }
      // A label after the samples (not as Prometheus encodes): decoded the long way, not cached.
      this.#sampleSlots = 0;
      this.#position = start;
      labelsEnd = -1;
    }
    this.#decodeSeries(end, labelsEnd);
  }

  /**
   * Reads the rest of a series whose labels were read: where its samples are.
   * @returns false when a label comes after them
   */
  #samplesAfterLabels(end: number): boolean {
    // One sample of a one-byte length ending the series (0x12: field 2, length-delimited), as
    // Prometheus sends each series: noted without the loop.
    const position = this.#position;
    const buffer = this.#buffer;
    const length = buffer[position + 1] ?? 0x80;
    if (buffer[position] === 0x12 && length < 0x80 && position + 2 + length === end) {
      this.#addSample(position + 2, end);
      this.#position = end;
      return true;
    }
    while (this.#position < end) {
      const tag = this.#varint32();
      const field = tag >>> 3;
      const wire = tag & 7;
      if (field === 2 && wire === LENGTH_DELIMITED) {
        const length = this.#length(end);
        const sampleEnd = this.#position + length;
        this.#addSample(this.#position, sampleEnd);
        this.#position = sampleEnd;
      } else if (field === 1 && wire === LENGTH_DELIMITED) {
        return false;
      } else {
        this.#skip(wire, end);
      }
    }
    if (this.#position !== end) throw new RemoteWriteError("truncated time series");
    return true;
  }

  /** Notes where a sample of the current series starts and ends. */
  #addSample(start: number, end: number): void {
    const slot = this.#sampleSlots;
    this.#samplePositions[slot] = start;
    this.#samplePositions[slot + 1] = end;
    this.#sampleSlots = slot + 2;
  }

  /** The series decoded after `series` is remembered as its successor, the next one predicted. */
  #follow(series: CachedSeries | undefined): void {
    const previous = this.#previous;
    if (previous !== undefined && series !== undefined && previous.next !== series) previous.next = series;
    this.#previous = series;
  }

  /**
   * Reads a TimeSeries label by label (through the label cache) into its event template, and finds
   * its samples; caches the series when its labels end at `labelsEnd` (-1: not to be cached).
   */
  #decodeSeries(end: number, labelsEnd: number): void {
    const start = this.#position;
    // The labels go into a template that each sample's event copies.
    const template: Event = {};
    const meter = this.#meter;
    meter?.start();
    let within = true;
    let cacheable = labelsEnd >= 0;
    let service: string | undefined;
    while (this.#position < end) {
      const tag = this.#varint32();
      const field = tag >>> 3;
      const wire = tag & 7;
      if (field === 1 && wire === LENGTH_DELIMITED) {
        if (this.#position > labelsEnd) cacheable = false;
        const length = this.#length(end);
        if (!within) {
          this.#position += length; // a series over a bound: its other labels are not decoded
          continue;
        }
        if (meter !== undefined && length > 2 * meter.bounds.string + 20) {
          // Its name or its value is over the string bound, whatever the split.
          within = meter.string(meter.bounds.string + 1);
          this.#position += length;
          continue;
        }
        this.#cachedLabel(this.#position, this.#position + length);
        if (this.#labelName === "__name__") service = this.#labelValue;
        else template[this.#labelName] = this.#labelValue;
        if (meter !== undefined) {
          const nameBytes = this.#labelName === "__name__" ? SERVICE_BYTES : this.#labelNameBytes;
          within = meter.field(nameBytes) && meter.string(this.#labelValueBytes);
        }
      } else if (field === 2 && wire === LENGTH_DELIMITED) {
        const length = this.#length(end);
        const sampleEnd = this.#position + length;
        this.#addSample(this.#position, sampleEnd);
        this.#position = sampleEnd;
      } else {
        this.#skip(wire, end);
      }
    }
    if (this.#position !== end) throw new RemoteWriteError("truncated time series");
    if (within && meter !== undefined) {
      for (const bytes of SAMPLE_FIELDS) if (!meter.field(bytes) || !meter.value()) break;
    }
    this.#seriesBound = meter?.exceeded;
    // `service` is set after the labels, so `__name__` wins over a label called `service`.
    if (service !== undefined) template.service = service;
    template.metric = 0;
    template.time = 0;
    // A dictionary's spread copy has the fast shape its copies keep (compact once seen again).
    this.#template = { ...template };
    if (cacheable && this.#seriesBound === undefined) {
      this.#follow(this.#seriesCache.add(this.#bytes, start, labelsEnd, this.#template));
    } else {
      this.#follow(undefined);
    }
  }

  /**
   * Emits up to `limit` samples of the current series (or counts them, for a series over a bound).
   * @returns how many samples were read
   */
  #emitSamples(limit: number, emit: (event: Event) => void): number {
    const samples = this.#positions;
    const saved = this.#position;
    let read = 0;
    const slots = this.#sampleSlots;
    while (this.#nextSample < slots && read < limit) {
      const i = this.#nextSample;
      // Positions come in pairs, the start and the end of each sample: both are there.
      const start = samples[i];
      const end = samples[i + 1];
      if (start === undefined || end === undefined) break;
      this.#nextSample += 2;
      read++;
      if (!this.#sample(start, end)) continue; // a staleness marker
      const bound = this.#seriesBound;
      if (bound !== undefined) {
        this.refused.set(bound, (this.refused.get(bound) ?? 0) + 1);
        continue;
      }
      this.#emit(this.#template, emit);
    }
    this.#position = saved;
    return read;
  }

  /** Emits the sample just read as a copy of `template`. */
  #emit(template: Event, emit: (event: Event) => void): void {
    const event = { ...template };
    event.metric = this.#sampleValue;
    event.time = this.#sampleTimestamp / 1000;
    emit(event);
    this.#emitted++;
  }

  /**
   * Reads a Label through the cache of whole labels: a label that repeats (the same name and value
   * bytes, as from one scrape to the next) costs one hash and one comparison of its bytes.
   */
  #cachedLabel(start: number, end: number): void {
    // A hash of the label's bytes is cheaper than decoding its two strings.
    const hash = hashOf(this.#view, start, end);
    const cached = this.#labels.find(hash, this.#bytes, start, end);
    if (cached !== undefined) {
      this.#labelName = cached.name;
      this.#labelValue = cached.value;
      this.#labelNameBytes = cached.nameBytes;
      this.#labelValueBytes = cached.valueBytes;
      this.#position = end;
      return;
    }
    this.#label(end);
    const name = this.#labelName;
    const value = this.#labelValue;
    const nameBytes = this.#labelNameBytes;
    this.#labels.add(hash, this.#bytes, start, end, { name, value, nameBytes, valueBytes: this.#labelValueBytes });
  }

  #label(end: number): void {
    let name = "";
    let value = "";
    let nameBytes = 0;
    let valueBytes = 0;
    while (this.#position < end) {
      const tag = this.#varint32();
      const wire = tag & 7;
      if (wire === LENGTH_DELIMITED && (tag >>> 3 === 1 || tag >>> 3 === 2)) {
        const length = this.#length(end);
        const text = utf8.decode(this.#buffer.subarray(this.#position, this.#position + length));
        this.#position += length;
        if (tag >>> 3 === 1) {
          name = text;
          nameBytes = length;
        } else {
          value = text;
          valueBytes = length;
        }
      } else {
        this.#skip(wire, end);
      }
    }
    if (this.#position !== end) throw new RemoteWriteError("truncated label");
    this.#labelName = name;
    this.#labelValue = value;
    this.#labelNameBytes = nameBytes;
    this.#labelValueBytes = valueBytes;
  }

  /**
   * Reads a Sample into `#sampleValue` and `#sampleTimestamp` (no tuple per sample).
   * @returns false for a staleness marker
   */
  #sample(start: number, end: number): boolean {
    const saved = this.#position;
    if (this.#canonicalSample(start, end)) {
      this.#position = saved;
      return !isStale(this.#view, start + 1);
    }
    this.#position = start;
    let stale = false;
    this.#sampleValue = 0;
    this.#sampleTimestamp = 0;
    while (this.#position < end) {
      const tag = this.#varint32();
      const field = tag >>> 3;
      const wire = tag & 7;
      if (field === 1 && wire === FIXED64) {
        if (this.#position + 8 > end) throw new RemoteWriteError("truncated sample value");
        stale = isStale(this.#view, this.#position);
        this.#sampleValue = this.#view.getFloat64(this.#position, true);
        this.#position += 8;
      } else if (field === 2 && wire === VARINT) {
        this.#sampleTimestamp = this.#int64(end);
      } else {
        this.#skip(wire, end);
      }
    }
    if (this.#position !== end) throw new RemoteWriteError("truncated sample");
    this.#position = saved;
    return !stale;
  }

  /**
   * Reads a Sample encoded as Prometheus encodes it, the value (field 1, fixed64) then the
   * timestamp (field 2, varint) and nothing else, without the loop over its fields.
   * @returns false (nothing read, the position moved) when it is encoded otherwise
   */
  #canonicalSample(start: number, end: number): boolean {
    const buffer = this.#buffer;
    if (end - start < 11 || buffer[start] !== 0x09 || buffer[start + 9] !== 0x10) return false;
    // A timestamp of today's (6 bytes) is read without the general varint reader.
    let timestamp = shortVarint(buffer, start + 10, end);
    if (timestamp < 0) {
      this.#position = start + 10;
      timestamp = this.#int64(end);
      if (this.#position !== end) return false;
    }
    this.#sampleValue = this.#view.getFloat64(start + 1, true);
    this.#sampleTimestamp = timestamp;
    return true;
  }

  #varint32(): number {
    const buffer = this.#buffer;
    let result = 0;
    let shift = 0;
    for (;;) {
      const byte = this.#position < buffer.length ? buffer[this.#position++] : undefined;
      if (byte === undefined) throw new RemoteWriteError("truncated varint");
      if (shift < 28) result |= (byte & 0x7f) << shift;
      else if (shift < 64) result += (byte & 0x7f) * 2 ** shift;
      else throw new RemoteWriteError("varint too long");
      if (byte < 0x80) return result;
      shift += 7;
    }
  }

  /** A length prefix that must fit before `end`. */
  #length(end: number): number {
    const length = this.#varint32();
    if (this.#position + length > end) throw new RemoteWriteError("length beyond the end of the message");
    return length;
  }

  /** A signed 64-bit varint (timestamps in milliseconds), exact within ±2^53. */
  #int64(end: number): number {
    const buffer = this.#buffer;
    let low = 0;
    let high = 0;
    let shift = 0;
    for (;;) {
      const byte = this.#position < end ? buffer[this.#position++] : undefined;
      if (byte === undefined) throw new RemoteWriteError("truncated varint");
      if (shift < 28) low |= (byte & 0x7f) << shift;
      else if (shift === 28) {
        low |= (byte & 0x0f) << 28;
        high |= (byte & 0x7f) >> 4;
      } else if (shift < 64) high |= (byte & 0x7f) << (shift - 32);
      else throw new RemoteWriteError("varint too long");
      if (byte < 0x80) break;
      shift += 7;
    }
    // Two's complement over 64 bits: the high word carries the sign.
    return (high | 0) * 4294967296 + (low >>> 0);
  }

  #skip(wire: number, end: number): void {
    switch (wire) {
      case VARINT:
        this.#int64(end);
        return;
      case FIXED64:
        this.#position += 8;
        break;
      case LENGTH_DELIMITED: {
        // Read the length first: `position += length()` would add to the position before the varint.
        const length = this.#length(end);
        this.#position += length;
        return;
      }
      case FIXED32:
        this.#position += 4;
        break;
      default:
        throw new RemoteWriteError(`unsupported wire type ${wire}`);
    }
    if (this.#position > end) throw new RemoteWriteError("field beyond the end of the message");
  }
}

const utf8 = new TextDecoder("utf-8");
