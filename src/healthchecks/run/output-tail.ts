/**
 * The last bytes of a command's output, for `vigie run` (docs/healthchecks.md#vigie-run): what a
 * heartbeat's result message shows of a job. Memory stays bounded whatever the job prints.
 */

/** The most of a job's output `vigie run` sends with its last ping: 10 KiB. */
export const OUTPUT_TAIL_BYTES = 10 * 1024;

/** Keeps the last `limit` bytes written to it, in the order they were written. */
export class OutputTail {
  #chunks: Buffer[] = [];
  #size = 0;
  #dropped = false;

  /** @param limit the most bytes kept */
  constructor(readonly limit: number = OUTPUT_TAIL_BYTES) {}

  /** Appends `chunk`, forgetting the oldest bytes past the limit. */
  write(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    while (this.#size - (this.#chunks[0]?.length ?? 0) >= this.limit) {
      this.#size -= this.#chunks.shift()?.length ?? 0;
      this.#dropped = true;
    }
  }

  /** Whether bytes were forgotten. */
  get truncated(): boolean {
    return this.#dropped || this.#size > this.limit;
  }

  /**
   * The kept bytes: at most `limit`, starting at a character boundary (UTF-8 continuation bytes cut
   * in half at the start are dropped, so the text does not begin with a replacement character).
   */
  bytes(): Buffer {
    const all = Buffer.concat(this.#chunks);
    let start = Math.max(0, all.length - this.limit);
    if (start > 0) {
      // 0b10xxxxxx: the middle of a multi-byte character.
      while (start < all.length && start < all.length - this.limit + 3 && ((all[start] ?? 0) & 0xc0) === 0x80) start++;
    }
    return all.subarray(start);
  }
}
