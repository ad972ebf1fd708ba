/**
 * The protobuf varint of `value` (a non-negative safe integer), minimal: seven bits a byte, least
 * significant group first, the high bit set on every byte but the last (protobuf encoding).
 */
export function varint(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}
