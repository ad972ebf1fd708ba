/**
 * The bytes that the connections of one Riemann input hold for their clients, all together,
 * against `streams.riemann.max-buffered-bytes`: frames partly received, frames received and not
 * handled yet or being handled, replies the client has not read yet.
 *
 * When a connection's share grows the total past the limit, the connection that has waited longest
 * on its client (the oldest unfinished frame, or the oldest reply not read) is shed, then the next
 * one, until the total is back under the limit. Shedding the one that waited longest, rather than
 * the one whose bytes came last, means that slow or stalled clients holding memory give way to
 * clients that send whole frames at once: a client filling the budget with frames it never
 * finishes cannot keep the others out. Bytes that wait on the server (a frame being handled) are
 * never shed: they count, and are released once handled.
 */

/** A connection as the budget sees it. */
export interface BudgetHolder {
  /**
   * Since when the holder's bytes wait on its client (`performance.now()`, milliseconds): since
   * the first bytes of its unfinished frame, or since its client stopped reading its replies;
   * undefined when it holds nothing that waits on its client.
   */
  readonly waitingSince: number | undefined;
  /**
   * Drops what it holds and closes its connection, reporting the release to the budget before it
   * returns ({@link waitingSince} is undefined afterwards).
   */
  shed(): void;
}

/** The shared byte budget of the connections of one Riemann input. */
export class ByteBudget {
  #total = 0;
  #shedding = false;

  /**
   * @param limit the bytes that the holders may hold together (`max-buffered-bytes`)
   * @param holders every holder, read when the total is over the limit
   * @param onChange told of every change of the total, in bytes (a gauge)
   */
  constructor(
    readonly limit: number,
    private readonly holders: () => Iterable<BudgetHolder>,
    private readonly onChange: (delta: number) => void = () => {},
  ) {}

  /** Bytes held now, all holders together. */
  get total(): number {
    return this.#total;
  }

  /**
   * A holder holds `delta` bytes more (or fewer, when negative). When that takes the total over
   * the limit, holders are shed, the one waiting longest first, until it is not, or until only
   * holders waiting on the server are left.
   * @returns how many holders were shed
   */
  change(delta: number): number {
    if (delta === 0) return 0;
    this.#total += delta;
    this.onChange(delta);
    if (delta < 0 || this.#total <= this.limit || this.#shedding) return 0;
    // A holder being shed reports its release through change(): no shedding within shedding.
    this.#shedding = true;
    // Each holder is shed once, whatever it reports afterwards.
    const shed = new Set<BudgetHolder>();
    try {
      while (this.#total > this.limit) {
        const oldest = this.#oldestWaiting(shed);
        if (oldest === undefined) break;
        shed.add(oldest);
        oldest.shed();
      }
    } finally {
      this.#shedding = false;
    }
    return shed.size;
  }

  /** The holder waiting longest on its client; a linear scan, done only when over the limit. */
  #oldestWaiting(skipped: ReadonlySet<BudgetHolder>): BudgetHolder | undefined {
    let oldest: BudgetHolder | undefined;
    let since = Number.POSITIVE_INFINITY;
    for (const holder of this.holders()) {
      const waiting = holder.waitingSince;
      if (waiting !== undefined && waiting < since && !skipped.has(holder)) {
        oldest = holder;
        since = waiting;
      }
    }
    return oldest;
  }
}
