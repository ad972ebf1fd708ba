/**
 * OTLP/HTTP metrics in protobuf (schema: proto/otlp-metrics.proto), decoded by hand, data point by
 * data point, into the events otlp-signals.ts describes (the same as OTLP/JSON gives, checked
 * against protobufjs by a differential test). Each point is measured as it is read, so that one of
 * a million attributes or buckets is dropped after a thousand, and the decoder yields after each
 * point, so that a large request can be decoded a slice per turn of the event loop.
 *
 * Singular fields keep their last occurrence, repeated ones every occurrence in order (packed or
 * not), unknown fields are skipped; of a metric's kinds (its oneof), the last one present wins.
 */
import type { Event } from "./event.js";
import { type EventBound, type EventBounds, EventMeter, exceededBound } from "./event-bounds.js";
import { OtlpError } from "./otlp.js";
import type { DataPoint, ExponentialBuckets, MetricHead, MetricType, OtlpOrigin, PointValues } from "./otlp-signals.js";
import { dataPointEvent } from "./otlp-signals.js";
import { type Json, OtlpValueReader, OVER, occurrences, type Region, scopeLevels, seconds, utf8 } from "./otlp-wire.js";
import { FIXED64, LENGTH_DELIMITED, VARINT, WireCursor } from "./protobuf-wire.js";

/** Field numbers of `Metric`'s kinds. */
const KIND_FIELDS: Readonly<Record<number, MetricType>> = {
  5: "gauge",
  7: "sum",
  9: "histogram",
  10: "exponential-histogram",
  11: "summary",
};

/** The field of a data point's attributes, by its metric's kind. */
const ATTRIBUTES_FIELD: Readonly<Record<MetricType, number>> = {
  gauge: 7,
  sum: 7,
  histogram: 9,
  "exponential-histogram": 1,
  summary: 7,
};

/** Fields of a data point as read: for each field number, its occurrences. */
interface PointFields {
  /** Positions of each fixed64/double occurrence. */
  readonly fixed: number[][];
  /** The last varint of each field. */
  readonly varint: Array<bigint | undefined>;
  /** Regions of each length-delimited occurrence (attributes excepted). */
  readonly delimited: Region[][];
}

/** Adds `item` to the occurrences of field `field`. */
function append<T>(lists: T[][], field: number, item: T): void {
  const list = lists[field];
  if (list === undefined) lists[field] = [item];
  else list.push(item);
}

const zigzag = (value: bigint): number => Number((value >> 1n) ^ -(value & 1n));

/**
 * Decodes `ExportMetricsServiceRequest` bodies into one event per data point, each held to the
 * event bounds (a point over one gives the bound instead of its event). Not reentrant: a request
 * decoded in slices needs an instance of its own.
 */
export class OtlpMetricsDecoder {
  /** Reads the body being decoded (its buffer) and measures each item's event (its meter). */
  readonly #values: OtlpValueReader;

  constructor(readonly bounds: EventBounds) {
    this.#values = new OtlpValueReader(new EventMeter(bounds));
  }

  /**
   * The events of a request, one per data point in order (or the bound it exceeded), read as the
   * caller iterates.
   * @throws OtlpError (as the iteration goes) when the bytes are not a valid request, or hold
   *   attribute values nested too deep; WireError for a truncated field
   */
  *events(body: Uint8Array): Generator<Event | EventBound, void, void> {
    this.#values.buffer = body;
    for (const { origin, over, shared, region } of scopeLevels(body, this.#values)) {
      for (const metric of occurrences(body, region.start, region.end, 2)) {
        const { head, points } = this.#metric(metric);
        for (const point of points) yield over ?? this.#point(point, origin, head, shared);
      }
    }
    this.#values.buffer = new Uint8Array(0);
  }

  /** A `Metric`: name (1), description (2), unit (3), and its kind's data (the last of 5 to 11). */
  #metric(region: Region): { head: MetricHead; points: Region[] } {
    const buffer = this.#values.buffer;
    const head = { name: "", description: "", unit: "", type: "gauge" as MetricType, temporality: 0, monotonic: false };
    let data: Region | undefined;
    const wire = new WireCursor(buffer, region.start, region.end);
    while (wire.position < region.end) {
      const tag = wire.varint();
      const field = tag >>> 3;
      if ((tag & 7) !== LENGTH_DELIMITED) {
        wire.skip(tag & 7);
        continue;
      }
      const at = wire.bytes();
      const kind = KIND_FIELDS[field];
      if (field === 1) head.name = utf8(buffer, at, wire.position);
      else if (field === 2) head.description = utf8(buffer, at, wire.position);
      else if (field === 3) head.unit = utf8(buffer, at, wire.position);
      else if (kind !== undefined) {
        head.type = kind;
        data = { start: at, end: wire.position };
      }
    }
    if (data === undefined) return { head, points: [] };
    // Sum, Histogram, ExponentialHistogram: aggregation_temporality (2); Sum: is_monotonic (3).
    const points: Region[] = [];
    const dataWire = new WireCursor(buffer, data.start, data.end);
    while (dataWire.position < data.end) {
      const tag = dataWire.varint();
      const field = tag >>> 3;
      if (field === 1 && (tag & 7) === LENGTH_DELIMITED) {
        const at = dataWire.bytes();
        points.push({ start: at, end: dataWire.position });
      } else if (field === 2 && (tag & 7) === VARINT) head.temporality = dataWire.varint();
      else if (field === 3 && (tag & 7) === VARINT) head.monotonic = dataWire.varint() !== 0;
      else dataWire.skip(tag & 7);
    }
    return { head, points };
  }

  /**
   * A data point as an event, or the bound it exceeds. The resource's and scope's measures count
   * first; reading stops at the first bound exceeded.
   */
  #point(
    region: Region,
    origin: OtlpOrigin,
    head: MetricHead,
    shared: { fields: number; size: number },
  ): Event | EventBound {
    const meter = this.#values.meter;
    meter.start();
    meter.merge(shared.fields, shared.size);
    const attributesField = ATTRIBUTES_FIELD[head.type];
    const attributes: Json = {};
    const fields: PointFields = { fixed: [], varint: [], delimited: [] };
    const wire = new WireCursor(this.#values.buffer, region.start, region.end);
    while (wire.position < region.end) {
      const tag = wire.varint();
      const field = tag >>> 3;
      const type = tag & 7;
      if (type === LENGTH_DELIMITED && field === attributesField) {
        const at = wire.bytes();
        if (this.#values.keyValue(at, wire.position, 1, attributes) === OVER) return meter.exceeded ?? "max-event-size";
      } else if (field > 15) {
        wire.skip(type);
      } else if (type === FIXED64) {
        append(fields.fixed, field, wire.position);
        wire.skip(type);
      } else if (type === VARINT) {
        fields.varint[field] = wire.varint64();
      } else if (type === LENGTH_DELIMITED) {
        const at = wire.bytes();
        append(fields.delimited, field, { start: at, end: wire.position });
      } else {
        wire.skip(type);
      }
    }
    const values = this.#pointValues(head.type, fields);
    if (values === OVER) return meter.exceeded ?? "max-event-size";
    const point: DataPoint = {
      attributes,
      start: seconds(this.#fixed64(fields, 2) ?? 0n),
      time: seconds(this.#fixed64(fields, 3) ?? 0n),
      values,
    };
    const event = dataPointEvent(origin, head, point);
    return exceededBound(event, this.bounds) ?? event;
  }

  /** The values of a point by its metric's kind, or OVER once the point is over a bound. */
  #pointValues(type: MetricType, fields: PointFields): PointValues | typeof OVER {
    switch (type) {
      case "gauge":
      case "sum": {
        // A oneof: of as_double (4) and as_int (6), the last on the wire wins.
        const doubleAt = fields.fixed[4]?.at(-1) ?? -1;
        const intAt = fields.fixed[6]?.at(-1) ?? -1;
        if (doubleAt > intAt) return { kind: "number", value: this.#double(fields, 4) };
        const int = this.#fixed64(fields, 6);
        return { kind: "number", value: int === undefined ? undefined : Number(BigInt.asIntN(64, int)) };
      }
      case "histogram": {
        const bounds = this.#repeatedFixed(fields, 7, true);
        const counts = this.#repeatedFixed(fields, 6, false);
        if (bounds === OVER || counts === OVER) return OVER;
        return { kind: "histogram", ...this.#totals(fields, 11, 12), bounds, counts };
      }
      case "exponential-histogram": {
        const positive = this.#buckets(fields.delimited[8]?.at(-1));
        const negative = this.#buckets(fields.delimited[9]?.at(-1));
        if (positive === OVER || negative === OVER) return OVER;
        const scale = fields.varint[6];
        return {
          kind: "exponential-histogram",
          ...this.#totals(fields, 12, 13),
          scale: scale === undefined ? 0 : zigzag(scale),
          zeroCount: Number(this.#fixed64(fields, 7) ?? 0n),
          zeroThreshold: this.#double(fields, 14) ?? 0,
          positive,
          negative,
        };
      }
      case "summary": {
        const quantiles: Array<{ quantile: number; value: number }> = [];
        for (const region of fields.delimited[6] ?? []) {
          if (!this.#values.meter.field(9) || !this.#values.meter.value()) return OVER;
          quantiles.push(this.#quantile(region));
        }
        return {
          kind: "summary",
          count: Number(this.#fixed64(fields, 4) ?? 0n),
          sum: this.#double(fields, 5) ?? 0,
          quantiles,
        };
      }
    }
  }

  /** Count (4), sum (5), min and max of a histogram point. */
  #totals(fields: PointFields, minField: number, maxField: number) {
    return {
      count: Number(this.#fixed64(fields, 4) ?? 0n),
      sum: this.#double(fields, 5),
      min: this.#double(fields, minField),
      max: this.#double(fields, maxField),
    };
  }

  #fixed64(fields: PointFields, field: number): bigint | undefined {
    const position = fields.fixed[field]?.at(-1);
    return position === undefined ? undefined : new WireCursor(this.#values.buffer, position, position + 8).fixed64();
  }

  #double(fields: PointFields, field: number): number | undefined {
    const position = fields.fixed[field]?.at(-1);
    return position === undefined ? undefined : new WireCursor(this.#values.buffer, position, position + 8).double();
  }

  /**
   * A repeated fixed64 or double field, packed (length-delimited) or not, in order; each item
   * counted as a value.
   */
  #repeatedFixed(fields: PointFields, field: number, isDouble: boolean): number[] | typeof OVER {
    const items: number[] = [];
    const meter = this.#values.meter;
    const read = (wire: WireCursor) => (isDouble ? wire.double() : Number(wire.fixed64()));
    for (const position of fields.fixed[field] ?? []) {
      if (!meter.value()) return OVER;
      items.push(read(new WireCursor(this.#values.buffer, position, position + 8)));
    }
    for (const region of fields.delimited[field] ?? []) {
      if ((region.end - region.start) % 8 !== 0)
        throw new OtlpError("invalid protobuf: packed field of a partial item");
      const wire = new WireCursor(this.#values.buffer, region.start, region.end);
      while (wire.position < region.end) {
        if (!meter.value()) return OVER;
        items.push(read(wire));
      }
    }
    return items;
  }

  /** An exponential histogram's `Buckets`: offset (1, sint32), bucket counts (2, uint64). */
  #buckets(region: Region | undefined): ExponentialBuckets | typeof OVER {
    const counts: number[] = [];
    let offset = 0;
    if (region === undefined) return { offset, counts };
    const meter = this.#values.meter;
    const wire = new WireCursor(this.#values.buffer, region.start, region.end);
    while (wire.position < region.end) {
      const tag = wire.varint();
      const field = tag >>> 3;
      if (field === 1 && (tag & 7) === VARINT) offset = zigzag(wire.varint64());
      else if (field === 2 && (tag & 7) === VARINT) {
        if (!meter.value()) return OVER;
        counts.push(Number(BigInt.asUintN(64, wire.varint64())));
      } else if (field === 2 && (tag & 7) === LENGTH_DELIMITED) {
        const at = wire.bytes();
        const packed = new WireCursor(this.#values.buffer, at, wire.position);
        while (packed.position < packed.end) {
          if (!meter.value()) return OVER;
          counts.push(Number(BigInt.asUintN(64, packed.varint64())));
        }
      } else wire.skip(tag & 7);
    }
    return { offset, counts };
  }

  /** A `ValueAtQuantile`: quantile (1), value (2). */
  #quantile(region: Region): { quantile: number; value: number } {
    const quantile = { quantile: 0, value: 0 };
    const wire = new WireCursor(this.#values.buffer, region.start, region.end);
    while (wire.position < region.end) {
      const tag = wire.varint();
      const field = tag >>> 3;
      if (field === 1 && (tag & 7) === FIXED64) quantile.quantile = wire.double();
      else if (field === 2 && (tag & 7) === FIXED64) quantile.value = wire.double();
      else wire.skip(tag & 7);
    }
    return quantile;
  }
}
