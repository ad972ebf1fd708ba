/**
 * Leases of a set of keys shared among the live members (docs/cluster.md): the 256 healthcheck
 * shards, the streams. Each member aims at its share of the keys and takes free or expired leases
 * up to it, releases what goes over it (a member joined), and renews what it holds at every
 * heartbeat. The database decides (conditional `UPDATE`s); this file holds the arithmetic and the
 * local view of what this instance holds.
 */
import type { HeldLease, LeaseTable } from "./storage.js";

/**
 * How many of `keyCount` keys the member of `rank` (its position among the live members sorted by
 * id) aims at: an even split, the first `keyCount mod members` members taking one more. 256
 * shards over 3 members: 86, 85, 85.
 */
export function shareOf(keyCount: number, members: number, rank: number): number {
  if (members <= 0) return keyCount;
  const base = Math.floor(keyCount / members);
  return base + (rank < keyCount % members ? 1 : 0);
}

/** The queries a {@link LeaseSet} needs (ClusterStore's). Durations in milliseconds. */
export interface LeaseQueries {
  ensureKeys<K extends string | number>(table: LeaseTable, keys: readonly K[]): Promise<void>;
  renew<K>(table: LeaseTable, owner: string, leaseMs: number): Promise<Array<HeldLease<K>>>;
  release<K extends string | number>(table: LeaseTable, owner: string, keys: readonly K[]): Promise<void>;
  take<K extends string | number>(
    table: LeaseTable,
    owner: string,
    keys: readonly K[],
    count: number,
    leaseMs: number,
  ): Promise<Array<HeldLease<K>>>;
  nextExpiry<K extends string | number>(
    table: LeaseTable,
    owner: string,
    keys: readonly K[],
  ): Promise<number | undefined>;
}

/**
 * What a module does when this instance gains or loses keys. `lost` runs before the lease is
 * released in the database (a stream's owner stops consuming first), and also when a lease lapsed
 * because this instance could not renew it.
 */
export interface LeaseListener<K> {
  gained(keys: readonly K[]): void | Promise<void>;
  lost(keys: readonly K[]): void | Promise<void>;
}

/** The leases this instance holds on one table, and the balancing step of each heartbeat. */
export class LeaseSet<K extends string | number> {
  /** Held keys and their epochs. */
  readonly #held = new Map<K, number>();
  /** Until when (monotonic clock, milliseconds) the held leases are valid without a renewal. */
  #validUntil = Number.NEGATIVE_INFINITY;
  #keys: () => readonly K[];
  #known = new Set<K>();
  readonly #listeners: Array<LeaseListener<K>> = [];
  /** Counts changes of the held set (`vigie_cluster_rebalances_total`). */
  onRebalance: () => void = () => {};
  /** Reports a listener that threw (the lease work goes on). */
  onError: (error: unknown) => void = () => {};

  constructor(
    readonly table: LeaseTable,
    readonly owner: string,
    readonly leaseMs: number,
    readonly queries: LeaseQueries,
    keys: () => readonly K[] = () => [],
    readonly now: () => number = () => performance.now(),
  ) {
    this.#keys = keys;
  }

  /** Sets where the keys come from (the streams module: the names of its streams). */
  setKeys(keys: () => readonly K[]): void {
    this.#keys = keys;
  }

  /** Adds a listener of gained and lost keys. */
  listen(listener: LeaseListener<K>): void {
    this.#listeners.push(listener);
  }

  /**
   * Whether this instance holds `key` now: held at the last renewal and not past its lease by the
   * local monotonic clock, measured from before the renewal was sent. The database counts the same
   * lease from when it received the renewal, so this ends first: another instance can take a key
   * only after this instance stopped considering it its own.
   */
  owns(key: K): boolean {
    return this.now() < this.#validUntil && this.#held.has(key);
  }

  /** The keys held (valid or not yet noticed as lapsed). */
  held(): K[] {
    return [...this.#held.keys()];
  }

  /** How many keys are held. */
  get size(): number {
    return this.#held.size;
  }

  /**
   * One heartbeat's work: renew, then release over the share or take up to it.
   * @param members the live members' ids, sorted (this instance's included or not yet)
   * @param startedAt the monotonic time before the heartbeat's first query
   * @returns milliseconds until a lease held by another instance ends when this instance is under
   *   its share (the caller runs one more step then), else undefined
   * @throws the database's error; the held leases then lapse at their time ({@link expire})
   */
  async balance(members: readonly string[], startedAt: number): Promise<number | undefined> {
    const keys = this.#keys();
    const fresh = keys.filter((key) => !this.#known.has(key));
    if (fresh.length > 0) {
      await this.queries.ensureKeys(this.table, fresh);
      for (const key of fresh) this.#known.add(key);
    }
    const wanted = new Set(keys);
    const renewed = await this.queries.renew<K>(this.table, this.owner, this.leaseMs);
    this.#validUntil = startedAt + this.leaseMs;
    const stillHeld = new Set(renewed.map((lease) => lease.key));
    const lapsed = [...this.#held.keys()].filter((key) => !stillHeld.has(key));
    if (lapsed.length > 0) await this.#lose(lapsed);
    // Leases held under this id before a restart within the lease are this instance's again.
    const recovered = renewed.filter((lease) => !this.#held.has(lease.key)).map((lease) => lease.key);
    for (const lease of renewed) this.#held.set(lease.key, lease.epoch);
    if (recovered.length > 0) {
      this.onRebalance();
      await this.#notify("gained", recovered);
    }

    const ranked = members.includes(this.owner) ? members : [...members, this.owner].sort();
    const share = shareOf(wanted.size, ranked.length, ranked.indexOf(this.owner));
    // Keys no longer wanted (a stream removed) go first, then the highest keys over the share.
    const unwanted = [...this.#held.keys()].filter((key) => !wanted.has(key));
    const over = [...this.#held.keys()].filter((key) => wanted.has(key)).sort(compareKeys);
    const extra = over.slice(share);
    const release = [...unwanted, ...extra];
    if (release.length > 0) {
      await this.#lose(release);
      await this.queries.release(this.table, this.owner, release);
      return undefined;
    }
    const missing = share - this.#held.size;
    if (missing <= 0) return undefined;
    const candidates = keys.filter((key) => !this.#held.has(key));
    const taken = await this.queries.take<K>(this.table, this.owner, candidates, missing, this.leaseMs);
    if (taken.length > 0) {
      // The lease of a taken key starts at the database's now(), after startedAt: valid till then.
      for (const lease of taken) this.#held.set(lease.key, lease.epoch);
      this.onRebalance();
      await this.#notify(
        "gained",
        taken.map((lease) => lease.key),
      );
    }
    if (taken.length >= missing) return undefined;
    return this.queries.nextExpiry(this.table, this.owner, candidates);
  }

  /**
   * Drops every held lease whose time passed without a renewal (the database is unreachable):
   * the listeners stop their work; another instance may take the keys once they expire there.
   */
  async expire(): Promise<void> {
    if (this.#held.size > 0 && this.now() >= this.#validUntil) await this.#lose([...this.#held.keys()]);
  }

  /** Gives up every lease (graceful stop): listeners first, then the database. */
  async releaseAll(): Promise<void> {
    const keys = [...this.#held.keys()];
    if (keys.length === 0) return;
    await this.#lose(keys);
    await this.queries.release(this.table, this.owner, keys);
  }

  async #lose(keys: readonly K[]): Promise<void> {
    for (const key of keys) this.#held.delete(key);
    this.onRebalance();
    await this.#notify("lost", keys);
  }

  async #notify(what: "gained" | "lost", keys: readonly K[]): Promise<void> {
    for (const listener of this.#listeners) {
      try {
        await listener[what](keys);
      } catch (error) {
        this.onError(error);
      }
    }
  }
}

function compareKeys(a: string | number, b: string | number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
