/**
 * The parts of a remote write Sample that the decoder reads for every sample: the staleness marker
 * of its value, and the varint of its timestamp read in locals (Prometheus' timestamps, in
 * milliseconds, take 6 bytes today) without the position state or the two 32-bit halves of the
 * decoder's general 64-bit varint reader.
 */

/** The bit pattern of Prometheus' staleness marker, a NaN (value.StaleNaN = 0x7ff0000000000002). */
const STALE_HIGH = 0x7ff00000;
const STALE_LOW = 0x00000002;

/** Whether the 8 bytes at `position` of `view` (a sample's value, little-endian) are the staleness marker. */
export function isStale(view: DataView, position: number): boolean {
  return view.getUint32(position + 4, true) === STALE_HIGH && view.getUint32(position, true) === STALE_LOW;
}

/**
 * Bytes of the varints read as one sum of 7-bit groups: at most 7 (49 bits, exact in a double, and
 * never negative: a negative int64 takes 10 bytes).
 */
export const SHORT_VARINT_BYTES = 7;

/**
 * The value of the varint that fills `[start, end)` of `buffer` exactly, when that takes 1 to
 * {@link SHORT_VARINT_BYTES} bytes (non-minimal encodings included, as protobuf reads them).
 * @returns the value (0 to 2^49 - 1), or -1 when the bytes are not one such varint (it ends before
 *   `end`, goes on past it, or is longer): the caller reads them the general way
 */
export function shortVarint(buffer: Uint8Array, start: number, end: number): number {
  if (end <= start || end - start > SHORT_VARINT_BYTES) return -1;
  let value = 0;
  let scale = 1;
  const last = end - 1;
  for (let p = start; p < last; p++) {
    const byte = buffer[p] ?? 0;
    if (byte < 0x80) return -1;
    value += (byte & 0x7f) * scale;
    scale *= 128;
  }
  const byte = buffer[last] ?? 0x80;
  return byte < 0x80 ? value + byte * scale : -1;
}
