/**
 * A decoder of Prometheus remote write 1.0 `WriteRequest` messages (protobuf, after snappy
 * decompression) straight into stream events (streams.md §8): one event per sample, every label a
 * top-level field with its string value, `__name__` as `service`, the sample value as `metric`, the
 * timestamp (milliseconds) as `time` in seconds. Staleness markers are skipped. Series come in
 * request order, samples in series order.
 *
 * Hand-written for this one hot path: it builds no intermediate message objects, reuses labels
 * across series and requests, and reads samples in place. `proto/remote-write.proto` is the
 * schema; a differential test checks this decoder against protobufjs on varied inputs.
 */
import type { Event } from "./event.js";

/** A body that is not a valid WriteRequest. */
export class RemoteWriteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RemoteWriteError";
  }
}

// Wire types of the protobuf encoding (https://protobuf.dev/programming-guides/encoding/).
const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

/** The bit pattern of Prometheus' staleness marker, a NaN (value.StaleNaN = 0x7ff0000000000002). */
const STALE_HIGH = 0x7ff00000;
const STALE_LOW = 0x00000002;

/** How many distinct labels are remembered before the cache starts over. */
const CACHE_LIMIT = 100_000;

/**
 * Decodes WriteRequests; one instance keeps a cache of labels, so that the names and values that
 * repeat from one scrape to the next are decoded once.
 */
export class RemoteWriteDecoder {
  // Labels by the 32-bit hash of their bytes; collisions are resolved by comparing bytes.
  readonly #labels = new Map<number, { view: DataView; name: string; value: string }>();
  // Reused between series: where the samples of the current series are, the label just read.
  #samplePositions: number[] = [];
  #labelName = "";
  #labelValue = "";
  #buffer: Uint8Array = new Uint8Array(0);
  #view: DataView = new DataView(new ArrayBuffer(0));
  #position = 0;
  #sampleValue = 0;
  /** Milliseconds since the Unix epoch. */
  #sampleTimestamp = 0;

  /**
   * Decodes a WriteRequest and passes each event to `emit`, in order.
   * @returns the number of events emitted (staleness markers excluded)
   * @throws RemoteWriteError when the bytes are not a valid WriteRequest
   */
  decode(buffer: Uint8Array, emit: (event: Event) => void): number {
    this.#buffer = buffer;
    this.#view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    this.#position = 0;
    let count = 0;
    const end = buffer.length;
    while (this.#position < end) {
      const tag = this.#varint32();
      if (tag >>> 3 === 1 && (tag & 7) === LENGTH_DELIMITED) {
        const length = this.#length(end);
        count += this.#series(this.#position + length, emit);
      } else {
        this.#skip(tag & 7, end);
      }
    }
    this.#buffer = new Uint8Array(0);
    return count;
  }

  #series(end: number, emit: (event: Event) => void): number {
    const samples = this.#samplePositions;
    samples.length = 0;
    // The labels go straight into the first event; later samples of the series copy it.
    const template: Event = {};
    let service: string | undefined;
    while (this.#position < end) {
      const tag = this.#varint32();
      const field = tag >>> 3;
      const wire = tag & 7;
      if (field === 1 && wire === LENGTH_DELIMITED) {
        const length = this.#length(end);
        this.#cachedLabel(this.#position, this.#position + length);
        if (this.#labelName === "__name__") service = this.#labelValue;
        else template[this.#labelName] = this.#labelValue;
      } else if (field === 2 && wire === LENGTH_DELIMITED) {
        const length = this.#length(end);
        const sampleEnd = this.#position + length;
        samples.push(this.#position, sampleEnd);
        this.#position = sampleEnd;
      } else {
        this.#skip(wire, end);
      }
    }
    if (this.#position !== end) throw new RemoteWriteError("truncated time series");
    // `service` is set after the labels, so `__name__` wins over a label called `service`.
    if (service !== undefined) template.service = service;
    let count = 0;
    for (let i = 0; i < samples.length; i += 2) {
      if (!this.#sample(samples[i] as number, samples[i + 1] as number)) continue; // a staleness marker
      const event = count === 0 ? template : { ...template };
      event.metric = this.#sampleValue;
      event.time = this.#sampleTimestamp / 1000;
      emit(event);
      count += 1;
    }
    return count;
  }

  /**
   * Reads a Label through the cache of whole labels: a label that repeats (the same name and value
   * bytes, as from one scrape to the next) costs one hash and one comparison of its bytes.
   */
  #cachedLabel(start: number, end: number): void {
    const buffer = this.#buffer;
    const view = this.#view;
    // FNV-1a over the label's bytes, four at a time: cheaper than decoding its two strings.
    let hash = 0x811c9dc5 ^ (end - start);
    let i = start;
    for (; i + 4 <= end; i += 4) hash = Math.imul(hash ^ view.getUint32(i, true), 0x01000193);
    for (; i < end; i++) hash = Math.imul(hash ^ (buffer[i] as number), 0x01000193);
    const cached = this.#labels.get(hash);
    if (cached !== undefined && sameBytes(cached.view, view, start, end)) {
      this.#labelName = cached.name;
      this.#labelValue = cached.value;
      this.#position = end;
      return;
    }
    this.#label(end);
    if (this.#labels.size >= CACHE_LIMIT) this.#labels.clear();
    const bytes = buffer.slice(start, end);
    this.#labels.set(hash, {
      view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      name: this.#labelName,
      value: this.#labelValue,
    });
  }

  #label(end: number): void {
    let name = "";
    let value = "";
    while (this.#position < end) {
      const tag = this.#varint32();
      const wire = tag & 7;
      if (wire === LENGTH_DELIMITED && (tag >>> 3 === 1 || tag >>> 3 === 2)) {
        const length = this.#length(end);
        const text = this.#string(this.#position, this.#position + length);
        this.#position += length;
        if (tag >>> 3 === 1) name = text;
        else value = text;
      } else {
        this.#skip(wire, end);
      }
    }
    if (this.#position !== end) throw new RemoteWriteError("truncated label");
    this.#labelName = name;
    this.#labelValue = value;
  }

  /**
   * Reads a Sample into `#sampleValue` and `#sampleTimestamp` (no tuple per sample).
   * @returns false for a staleness marker
   */
  #sample(start: number, end: number): boolean {
    const saved = this.#position;
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
        const low = this.#view.getUint32(this.#position, true);
        const high = this.#view.getUint32(this.#position + 4, true);
        stale = high === STALE_HIGH && low === STALE_LOW;
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

  /** Decodes UTF-8 bytes. */
  #string(start: number, end: number): string {
    return utf8.decode(this.#buffer.subarray(start, end));
  }

  #varint32(): number {
    const buffer = this.#buffer;
    let result = 0;
    let shift = 0;
    for (;;) {
      if (this.#position >= buffer.length) throw new RemoteWriteError("truncated varint");
      const byte = buffer[this.#position++] as number;
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
      if (this.#position >= end) throw new RemoteWriteError("truncated varint");
      const byte = buffer[this.#position++] as number;
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

/** Whether `cached` holds the bytes `[start, end)` of `view`, compared four bytes at a time. */
function sameBytes(cached: DataView, view: DataView, start: number, end: number): boolean {
  const length = end - start;
  if (cached.byteLength !== length) return false;
  let i = 0;
  for (; i + 4 <= length; i += 4) if (cached.getUint32(i, true) !== view.getUint32(start + i, true)) return false;
  for (; i < length; i++) if (cached.getUint8(i) !== view.getUint8(start + i)) return false;
  return true;
}
