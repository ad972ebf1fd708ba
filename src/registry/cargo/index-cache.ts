/**
 * The memory of rendered sparse index files (the Cargo index, docs/cargo.md), bounded in bytes rather than in files:
 * one crate's file grows with its versions and their lines (up to `max-index-line` each), so a
 * bound by count would let a few big crates take any amount of memory.
 */

/** One rendered index file: its ETag, its bytes and their gzip. */
export interface RenderedIndex {
  readonly etag: string;
  readonly body: Buffer;
  readonly gzip: Buffer;
}

/**
 * Rendered index files by key (a crate id; the mirror's lower-cased crate names), at most `maxBytes` of bodies and gzips together. Least recently
 * used first out: {@link get} moves an entry to the back, {@link set} evicts from the front until
 * the new entry fits. A file larger than the whole bound is served without being kept.
 */
export class IndexCache<K = number, V extends RenderedIndex = RenderedIndex> {
  readonly #entries = new Map<K, V>();
  #bytes = 0;

  /** @param maxBytes bytes of bodies and gzips kept (`registry.cargo.index-cache-size`); 0 keeps none */
  constructor(readonly maxBytes: number) {}

  /** Bytes held now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Files held now. */
  get size(): number {
    return this.#entries.size;
  }

  /** The file of a crate, marked as the most recently used. */
  get(crateId: K): V | undefined {
    const entry = this.#entries.get(crateId);
    if (entry !== undefined) {
      this.#entries.delete(crateId);
      this.#entries.set(crateId, entry);
    }
    return entry;
  }

  /** Keeps a crate's file (replacing its older one), evicting the least recently used as needed. */
  set(crateId: K, entry: V): void {
    this.delete(crateId);
    const weight = weightOf(entry);
    if (weight > this.maxBytes) return;
    for (const [oldest, old] of this.#entries) {
      if (this.#bytes + weight <= this.maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= weightOf(old);
    }
    this.#entries.set(crateId, entry);
    this.#bytes += weight;
  }

  /** Forgets a crate's file; a missing one is fine. */
  delete(crateId: K): void {
    const old = this.#entries.get(crateId);
    if (old === undefined) return;
    this.#entries.delete(crateId);
    this.#bytes -= weightOf(old);
  }
}

function weightOf(entry: RenderedIndex): number {
  return entry.body.length + entry.gzip.length;
}
