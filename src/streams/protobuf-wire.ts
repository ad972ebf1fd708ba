/**
 * A cursor over protobuf bytes (https://protobuf.dev/programming-guides/encoding/): varints,
 * fixed-width numbers, length-delimited fields and skipping, without building messages. For the
 * decoders that measure what they read (Riemann events, OTLP spans) so that they can stop at a
 * bound rather than decode a message of a million fields.
 */

// Wire types.
export const VARINT = 0;
export const FIXED64 = 1;
export const LENGTH_DELIMITED = 2;
export const FIXED32 = 5;

/** Bytes that are not a valid encoding: a truncated field, an invalid wire type. */
export class WireError extends RangeError {
  constructor(message: string) {
    super(message);
    this.name = "WireError";
  }
}

/** A position in protobuf bytes, within `[position, end)` of `buffer`. */
export class WireCursor {
  constructor(
    readonly buffer: Uint8Array,
    public position: number,
    readonly end: number,
  ) {}

  /**
   * A varint of up to 32 bits (tags, lengths, enums); a longer one keeps its low 32 bits, as
   * protobufjs does.
   * @throws WireError when truncated or longer than 10 bytes
   */
  varint(): number {
    let result = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      const byte = this.position < this.end ? this.buffer[this.position++] : undefined;
      if (byte === undefined) throw new WireError("truncated varint");
      if (shift < 32) result |= (byte & 0x7f) << shift;
      if (byte < 0x80) return result >>> 0;
    }
    throw new WireError("varint too long");
  }

  /**
   * A 64-bit varint as a two's complement BigInt (int64 values).
   * @throws WireError when truncated or longer than 10 bytes
   */
  varint64(): bigint {
    let result = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      const byte = this.position < this.end ? this.buffer[this.position++] : undefined;
      if (byte === undefined) throw new WireError("truncated varint");
      result |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return BigInt.asIntN(64, result);
    }
    throw new WireError("varint too long");
  }

  /** A little-endian unsigned 64-bit integer (`fixed64`). */
  fixed64(): bigint {
    const low = this.#uint32();
    const high = this.#uint32();
    return (BigInt(high) << 32n) | BigInt(low);
  }

  /** A little-endian IEEE 754 double. */
  double(): number {
    if (this.position + 8 > this.end) throw new WireError("truncated double");
    const view = new DataView(this.buffer.buffer, this.buffer.byteOffset + this.position, 8);
    this.position += 8;
    return view.getFloat64(0, true);
  }

  #uint32(): number {
    if (this.position + 4 > this.end) throw new WireError("truncated fixed-width field");
    const b = this.buffer;
    const p = this.position;
    this.position += 4;
    // The four bytes are within `end` (checked above): `?? 0` only satisfies the type checker.
    return ((b[p] ?? 0) | ((b[p + 1] ?? 0) << 8) | ((b[p + 2] ?? 0) << 16)) + (b[p + 3] ?? 0) * 0x1000000;
  }

  /**
   * Reads a length-delimited field's length and moves past its bytes.
   * @returns where its bytes start (they end at the new position)
   * @throws WireError when they go beyond `end`
   */
  bytes(end = this.end): number {
    const length = this.varint();
    const start = this.position;
    if (start + length > end) throw new WireError("field beyond the end of its message");
    this.position = start + length;
    return start;
  }

  /** Skips a field of wire type `type` (its tag read already). */
  skip(type: number, end = this.end): void {
    switch (type) {
      case VARINT:
        this.varint();
        return;
      case FIXED64:
        this.position += 8;
        break;
      case LENGTH_DELIMITED:
        this.bytes(end);
        return;
      case FIXED32:
        this.position += 4;
        break;
      default:
        throw new WireError(`invalid wire type ${type}`);
    }
    if (this.position > end) throw new WireError("field beyond the end of its message");
  }
}
