/**
 * Records when tokens are used without turning authenticated traffic into database writes
 * (docs/registry.md): `last_used_at` is written at most once a minute per token, in the background.
 * The write is never awaited by a request; its failure is logged, and the next use retries.
 */

/** Options of {@link LastUsedRecorder}. */
export interface LastUsedOptions {
  /** Writes the time of use of a token (milliseconds since the epoch). */
  readonly write: (tokenId: string, at: number) => Promise<void>;
  /** Called with the error of a failed write. */
  readonly onError: (error: unknown, tokenId: string) => void;
  /** Minimum milliseconds between two writes for one token. Default 60 000. */
  readonly intervalMs?: number;
  /** Entries kept before old ones are pruned. Default 10 000. */
  readonly maxEntries?: number;
}

/** Throttles the `last_used_at` writes of tokens. */
export class LastUsedRecorder {
  /** The last time written (or known to be stored) per token id, milliseconds since the epoch. */
  readonly #written = new Map<string, number>();
  readonly #pending = new Set<Promise<void>>();
  readonly #write: LastUsedOptions["write"];
  readonly #onError: LastUsedOptions["onError"];
  readonly #intervalMs: number;
  readonly #maxEntries: number;

  constructor(options: LastUsedOptions) {
    this.#write = options.write;
    this.#onError = options.onError;
    this.#intervalMs = options.intervalMs ?? 60_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
  }

  /**
   * Tells what the database already holds for a token (read with it), so a use within a minute of
   * a write by another instance or an earlier process writes nothing.
   */
  known(tokenId: string, storedAt: number | null): void {
    if (storedAt === null) return;
    const written = this.#written.get(tokenId);
    if (written === undefined || storedAt > written) this.#written.set(tokenId, storedAt);
  }

  /**
   * Notes a use of a token at `now` (milliseconds since the epoch); starts a write when the last
   * one is at least the interval old. Returns at once.
   */
  used(tokenId: string, now: number): void {
    const written = this.#written.get(tokenId);
    if (written !== undefined && now - written < this.#intervalMs) return;
    if (written === undefined && this.#written.size >= this.#maxEntries) this.#prune(now);
    this.#written.set(tokenId, now);
    const write = this.#write(tokenId, now).then(
      () => undefined,
      (error: unknown) => {
        // Let the next use try again rather than wait a minute.
        if (this.#written.get(tokenId) === now) this.#written.delete(tokenId);
        this.#onError(error, tokenId);
      },
    );
    this.#pending.add(write);
    void write.finally(() => this.#pending.delete(write));
  }

  /** Forgets a deleted token. */
  forget(tokenId: string): void {
    this.#written.delete(tokenId);
  }

  /** Resolves when every write started so far has ended (before the database closes). */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
  }

  /** Entries older than the interval throttle nothing: dropping them changes no behaviour. */
  #prune(now: number): void {
    for (const [tokenId, at] of this.#written) if (now - at >= this.#intervalMs) this.#written.delete(tokenId);
  }
}
