/**
 * Partitioned streams (docs/cluster.md, "Partitioned streams"): a stream declared with
 * `:partition-by [f ...]` runs as {@link PARTITION_COUNT} partitions, each with its own state and
 * index; an event goes to the partition chosen by a hash of those fields' values, so that every
 * event of one key reaches the same partition (and, in cluster mode, the same owner) in order.
 */
import { type Event, type FieldPath, fieldReader } from "./event.js";

/** How many partitions a partitioned stream has. Changing it moves keys between partitions. */
export const PARTITION_COUNT = 64;

/** FNV-1a 32-bit offset basis (http://www.isthe.com/chongo/tech/comp/fnv/). */
export const FNV_OFFSET = 0x811c9dc5;

const FNV_PRIME = 0x01000193;

function mix(hash: number, byte: number): number {
  return Math.imul(hash ^ byte, FNV_PRIME);
}

/**
 * Continues an FNV-1a 32-bit hash over the UTF-8 bytes of `text` (encoded on the fly, nothing
 * allocated; a lone surrogate counts as U+FFFD, as `TextEncoder` writes it).
 * @param hash the hash so far ({@link FNV_OFFSET} to start)
 * @returns the hash as an unsigned 32-bit integer
 */
export function fnv1a(text: string, hash: number = FNV_OFFSET): number {
  let h = hash;
  for (let i = 0; i < text.length; i++) {
    let code = text.charCodeAt(i);
    if (code < 0x80) {
      h = mix(h, code);
      continue;
    }
    if (code < 0x800) {
      h = mix(mix(h, 0xc0 | (code >> 6)), 0x80 | (code & 0x3f));
      continue;
    }
    if (code >= 0xd800 && code <= 0xdfff) {
      const low = code <= 0xdbff ? text.charCodeAt(i + 1) : Number.NaN;
      if (low >= 0xdc00 && low <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        i++;
        h = mix(mix(h, 0xf0 | (code >> 18)), 0x80 | ((code >> 12) & 0x3f));
        h = mix(mix(h, 0x80 | ((code >> 6) & 0x3f)), 0x80 | (code & 0x3f));
        continue;
      }
      code = 0xfffd;
    }
    h = mix(mix(mix(h, 0xe0 | (code >> 12)), 0x80 | ((code >> 6) & 0x3f)), 0x80 | (code & 0x3f));
  }
  return h >>> 0;
}

/** A field's value as the hash reads it: text as it is, missing or null as "", others as JSON. */
function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined || value === null) return "";
  return JSON.stringify(value) ?? "";
}

/**
 * The partition of an event: FNV-1a 32-bit over the UTF-8 text of the fields' values joined with
 * NUL (a missing field as empty text, numbers and other values as their JSON text), mod
 * {@link PARTITION_COUNT}. Stable across instances, restarts and versions.
 */
export type Partitioner = (event: Event) => number;

/** Compiles the {@link Partitioner} of `:partition-by [f ...]`. */
export function partitionerOf(fields: readonly FieldPath[]): Partitioner {
  const readers = fields.map(fieldReader);
  const [only] = readers;
  if (readers.length === 1 && only !== undefined) return (event) => fnv1a(textOf(only(event))) % PARTITION_COUNT;
  return (event) => {
    let hash = FNV_OFFSET;
    for (let i = 0; i < readers.length; i++) {
      if (i > 0) hash = mix(hash, 0) >>> 0;
      hash = fnv1a(textOf(readers[i]?.(event)), hash);
    }
    return hash % PARTITION_COUNT;
  };
}

/** The lease (and `GET /cluster`) key of partition `partition` of `stream`: `stream#partition`. */
export function partitionKey(stream: string, partition: number): string {
  return `${stream}#${partition}`;
}

/**
 * Reads a lease key: a stream name (`#` is not allowed in one), or `stream#k` for partition k.
 * @returns the stream and the partition (undefined for a whole stream)
 */
export function parsePartitionKey(key: string): { readonly stream: string; readonly partition: number | undefined } {
  const hash = key.lastIndexOf("#");
  if (hash < 0) return { stream: key, partition: undefined };
  const partition = Number(key.slice(hash + 1));
  return { stream: key.slice(0, hash), partition: Number.isInteger(partition) ? partition : undefined };
}
