/**
 * The caches of the remote write decoder, single labels and whole series. The cache of whole series
 * maps the labels of a series, as encoded bytes, to the event its samples become. Prometheus sends
 * the same series again with every scrape (the same labels, in the same order, encoded the same
 * way), so a series seen before costs one comparison of its label bytes and one copy of a
 * ready-made event, instead of reading and setting its labels one by one.
 */
import type { Event } from "./event.js";

/** Bytes of label copies held before the cache starts over. */
const CACHE_BYTES = 16 * 1024 * 1024;
/** Series held before the cache starts over (their events take about as much as their bytes). */
const CACHE_SERIES = 50_000;
/** Bytes of one slab of label copies. */
const SLAB_BYTES = 1024 * 1024;
/** A series whose labels take more bytes is not cached (Prometheus' take a few hundred). */
export const CACHED_SERIES_BYTES = 16 * 1024;
/** From this many bytes on, a native comparison (memcmp) is cheaper than a loop, call included. */
const NATIVE_COMPARISON_BYTES = 192;

/** The bytes of a request, as a DataView for the loops and a Buffer for native comparisons. */
export interface RequestBytes {
  readonly view: DataView;
  readonly buffer: Buffer;
}

/** Bytes copied into a slab. */
export interface SlabBytes {
  readonly slab: RequestBytes;
  readonly offset: number;
  readonly length: number;
}

/**
 * Copies of small byte ranges packed into slabs of {@link SLAB_BYTES}: one allocation per slab
 * rather than one per copy. Forgets them all at once.
 */
export class ByteSlabs {
  #slab = slabOf(0);
  #used = 0;
  /** Bytes copied since the last {@link clear}. */
  bytes = 0;

  /** A copy of `[start, end)` of the request. */
  copy(bytes: RequestBytes, start: number, end: number): SlabBytes {
    const length = end - start;
    if (this.#used + length > this.#slab.buffer.length) {
      this.#slab = slabOf(Math.max(SLAB_BYTES, length));
      this.#used = 0;
    }
    const offset = this.#used;
    bytes.buffer.copy(this.#slab.buffer, offset, start, end);
    this.#used += length;
    this.bytes += length;
    return { slab: this.#slab, offset, length };
  }

  clear(): void {
    this.#slab = slabOf(0);
    this.#used = 0;
    this.bytes = 0;
  }
}

/** A series seen before: its label bytes (in a slab) and the event its samples become. */
export interface CachedSeries extends SlabBytes {
  /**
   * Its labels as fields, `service`, then `metric` and `time` set to 0: each sample's event is a
   * copy of it (one object shape for every series of the same label names), with those two set.
   */
  template: Event;
  /** Whether {@link template} was made compact ({@link compactTemplate}): on the series' second sighting. */
  compact: boolean;
  readonly generation: number;
  /** The series that came after this one last time: usually the next one again. */
  next: CachedSeries | undefined;
}

/**
 * Series by the 30-bit hash of their label bytes (a small integer key); a collision replaces the
 * older series. Shared by the decoders of one route: every method is synchronous.
 */
export class SeriesCache {
  readonly #series = new Map<number, CachedSeries>();
  readonly #slabs = new ByteSlabs();
  /** Bumped when the cache starts over: a decoder's predicted series from before is not followed. */
  generation = 0;

  /**
   * Whether the series that starts at `start` of the request (and ends by `end`) opens with the labels of
   * `predicted` and has no other label after them: one comparison, no scan of its labels, no hash.
   */
  opensWith(predicted: CachedSeries, bytes: RequestBytes, start: number, end: number): boolean {
    const labelsEnd = start + predicted.length;
    return (
      predicted.generation === this.generation &&
      labelsEnd <= end &&
      // 0x0a: another label (field 1, length-delimited) would follow.
      (labelsEnd === end || bytes.view.getUint8(labelsEnd) !== 0x0a) &&
      sameBytes(predicted, bytes, start, labelsEnd)
    );
  }

  /**
   * The series whose label bytes are `[start, end)` of the request.
   * @returns undefined when it was not seen (or was forgotten)
   */
  find(bytes: RequestBytes, start: number, end: number): CachedSeries | undefined {
    const cached = this.#series.get(hashOf(bytes.view, start, end));
    return cached !== undefined && sameBytes(cached, bytes, start, end) ? cached : undefined;
  }

  /**
   * Remembers the series whose label bytes are `[start, end)` of the request (at most
   * {@link CACHED_SERIES_BYTES}), with its template (not to be changed afterwards).
   */
  add(bytes: RequestBytes, start: number, end: number, template: Event): CachedSeries {
    const length = end - start;
    if (this.#series.size >= CACHE_SERIES || this.#slabs.bytes + length > CACHE_BYTES) this.#clear();
    const { slab, offset } = this.#slabs.copy(bytes, start, end);
    const series: CachedSeries = {
      slab,
      offset,
      length,
      template,
      compact: false,
      generation: this.generation,
      next: undefined,
    };
    this.#series.set(hashOf(bytes.view, start, end), series);
    return series;
  }

  /**
   * The template of `series`, made compact ({@link compactTemplate}) when it is asked for: the series
   * came again, and each of its samples' events will be a copy of it.
   */
  templateOf(series: CachedSeries): Event {
    if (!series.compact) {
      series.template = compactTemplate(series.template);
      series.compact = true;
    }
    return series.template;
  }

  /** How many series are cached. */
  get size(): number {
    return this.#series.size;
  }

  #clear(): void {
    this.#series.clear();
    this.#slabs.clear();
    this.generation++;
  }
}

/**
 * FNV-1a over bytes `[start, end)` of `view`, four at a time, reduced to 30 bits so that it is a
 * small integer (a Map key that needs no allocation).
 */
export function hashOf(view: DataView, start: number, end: number): number {
  let hash = 0x811c9dc5 ^ (end - start);
  let i = start;
  for (; i + 4 <= end; i += 4) hash = Math.imul(hash ^ view.getUint32(i, true), 0x01000193);
  for (; i < end; i++) hash = Math.imul(hash ^ view.getUint8(i), 0x01000193);
  return (hash ^ (hash >>> 30)) & 0x3fffffff;
}

/**
 * A copy of an event template (labels as strings, `metric` and `time` numbers) whose fields are all
 * stored inside the object. A template of many labels made field by field is a dictionary, and its
 * spread copy keeps only its first four fields inside, the others in a second array that each
 * event copied from it allocates too; JSON.parse sizes an object to its fields. The copy costs a
 * few microseconds, paid for series that come again, not for every new one. Only own fields are
 * copied, as a spread copy copies them (a label `__proto__` is not a field of the template).
 */
export function compactTemplate(template: Event): Event {
  return JSON.parse(JSON.stringify(template)) as Event;
}

/** The bytes of a request as {@link RequestBytes}, without a copy. */
export function requestBytes(bytes: Uint8Array): RequestBytes {
  return {
    view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
  };
}

function slabOf(length: number): RequestBytes {
  return requestBytes(new Uint8Array(length));
}

/** Whether `series` holds the bytes `[start, end)` of the request. */
export function sameBytes(series: SlabBytes, bytes: RequestBytes, start: number, end: number): boolean {
  const length = end - start;
  if (series.length !== length) return false;
  const offset = series.offset;
  if (length >= NATIVE_COMPARISON_BYTES) {
    return bytes.buffer.compare(series.slab.buffer, offset, offset + length, start, end) === 0;
  }
  const slab = series.slab.view;
  const view = bytes.view;
  let i = 0;
  for (; i + 4 <= length; i += 4)
    if (slab.getUint32(offset + i, true) !== view.getUint32(start + i, true)) return false;
  for (; i < length; i++) if (slab.getUint8(offset + i) !== view.getUint8(start + i)) return false;
  return true;
}

/**
 * Where the labels (field 1 of a TimeSeries) that open the series at `start` of `buffer` end.
 * @returns -1 when they are malformed (left for the full reading to report), end past `end` or take
 *   more than {@link CACHED_SERIES_BYTES}
 */
export function leadingLabelsEnd(buffer: Uint8Array, start: number, end: number): number {
  const limit = Math.min(end, start + CACHED_SERIES_BYTES);
  let p = start;
  // 0x0a: field 1 (labels), length-delimited.
  while (p < end && buffer[p] === 0x0a) {
    let length = 0;
    let shift = 0;
    let byte = 0x80;
    p++;
    while (byte >= 0x80) {
      if (p >= end || shift > 28) return -1;
      byte = buffer[p++] ?? 0;
      length += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    }
    p += length;
    if (p > limit) return -1;
  }
  return p;
}

/** How many distinct labels are remembered before the label cache starts over. */
const LABEL_CACHE_LABELS = 100_000;
/** Bytes of label copies held before the label cache starts over. */
const LABEL_CACHE_BYTES = 8 * 1024 * 1024;

/** A label's decoded name and value and their UTF-8 lengths. */
export interface DecodedLabel {
  readonly name: string;
  readonly value: string;
  readonly nameBytes: number;
  readonly valueBytes: number;
}

/** A label remembered with its bytes. */
type CachedLabel = DecodedLabel & SlabBytes;

/**
 * Labels by the 30-bit hash of their bytes ({@link hashOf}); a collision replaces the older label,
 * and a label is only found when its bytes are the same. Shared by the decoders of one route.
 */
export class LabelCache {
  readonly #labels = new Map<number, CachedLabel>();
  readonly #slabs = new ByteSlabs();

  /** The label whose bytes (hashing to `hash`) are `[start, end)` of the request, if remembered. */
  find(hash: number, bytes: RequestBytes, start: number, end: number): DecodedLabel | undefined {
    const cached = this.#labels.get(hash);
    return cached !== undefined && sameBytes(cached, bytes, start, end) ? cached : undefined;
  }

  /** Remembers `label`, whose bytes are `[start, end)` of the request. */
  add(hash: number, bytes: RequestBytes, start: number, end: number, label: DecodedLabel): void {
    if (this.#labels.size >= LABEL_CACHE_LABELS || this.#slabs.bytes + end - start > LABEL_CACHE_BYTES) {
      this.#labels.clear();
      this.#slabs.clear();
    }
    const { slab, offset, length } = this.#slabs.copy(bytes, start, end);
    this.#labels.set(hash, { ...label, slab, offset, length });
  }
}
