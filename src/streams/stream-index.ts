/**
 * The index of a stream (docs/streams.md): the latest event per key, in memory. The key is made of the
 * listed fields present in the event; an event with state `expired` removes its key. The clock
 * (`current-time`) is the largest event time seen by `index` actions and never goes backwards.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Predicate } from "./condition.js";
import { type Event, type FieldReader, isExpired, timeOf } from "./event.js";

/** Entries a bounded search examines between two looks at the clock. */
const ENTRIES_PER_CHECK = 64;

/** Separators of index keys; they cannot occur in field names or JSON-encoded values. */
const FIELD_SEPARATOR = "\u0001";
const ENTRY_SEPARATOR = "\u0000";

/** Keys an {@link IndexKeys} remembers before it starts over. */
const REMEMBERED_KEYS = 100_000;
/** Wrong predictions in a row after which {@link IndexKeys} stops predicting for a while. */
const MISSES_BEFORE_PAUSE = 16;
/** Keys looked up without a prediction (nor linked) during such a pause. */
const PAUSED_FINDS = 4096;
/** Keys after a pause that are linked and predicted whatever the misses: an order learnt anew. */
const LEARNING_FINDS = 512;

/** A field of an index key: its name (the path joined with dots) and its reader. */
export interface KeyField {
  readonly name: string;
  readonly read: FieldReader;
}

/**
 * A key of the index remembered by {@link IndexKeys}, with the entry the index last stored under it:
 * an event of a key seen before updates that entry without a lookup of the key.
 */
export interface KeySlot {
  readonly key: string;
  /** Set by {@link StreamIndex.put}; only followed while the entry is in the index. */
  entry: Entry | undefined;
}

/** The keys of the events whose first fields have given values: a level of {@link IndexKeys}. */
interface KeyNode extends KeySlot {
  /** By the value of the next field (none yet for the last field). */
  next: Map<unknown, KeyNode> | undefined;
  /** The values of the fields down to this node, in order (what a prediction compares). */
  readonly values: readonly unknown[];
  /**
   * The first two of {@link values}, in the node itself: a prediction compares them without a load
   * of the array (another object, often another cache line, for each event).
   */
  readonly firstValue: unknown;
  readonly secondValue: unknown;
  /** The key found right after this one last time: the one predicted to come next. */
  after: KeyNode | undefined;
}

/**
 * The index keys of the `index` action: for each event, the listed fields present in it, as
 * `name SOH value NUL` each (a value that is not a string in JSON). The key of values seen before is
 * the same string again, whose hash the index's map has computed already: found by the values,
 * which are often the same strings again too (the labels a remote write decoder caches), it costs
 * a lookup per field instead of a new string hashed whole.
 *
 * Events often come in the same order of keys push after push (a Prometheus shard sends its series
 * in the same order scrape after scrape), so the key that followed the previous event's last time
 * is tried first: when the event's values are that key's own (strict equality, no lookup), it is
 * the key the lookups would find. Events whose order does not repeat would pay a wrong prediction
 * each: after {@link MISSES_BEFORE_PAUSE} in a row, keys are only looked up for a while, then
 * learnt again for {@link LEARNING_FINDS} events (an order that changed once is soon predicted).
 */
export class IndexKeys {
  #root: KeyNode = rootNode();
  #remembered = 0;
  /** The key of the previous event, when it is a node of the current tree. */
  #last: KeyNode | undefined;
  /** Wrong predictions in a row. */
  #misses = 0;
  /** Finds left in a pause of predictions, then in the window that links keys again after one. */
  #paused = 0;
  #learning = 0;
  /** The names of the first two fields when they are top-level fields (no dot), read directly. */
  readonly #first: string | undefined;
  readonly #second: string | undefined;

  constructor(readonly fields: readonly KeyField[]) {
    const topLevel = (field: KeyField | undefined) => (field?.name.includes(".") === false ? field.name : undefined);
    this.#first = topLevel(fields[0]);
    this.#second = topLevel(fields[1]);
  }

  /** The key of `event`. */
  of(event: Event): string {
    const found = this.find(event);
    return typeof found === "string" ? found : found.key;
  }

  /** The key of `event` as the slot that remembers it, or as a string when none does. */
  find(event: Event): KeySlot | string {
    if (this.#paused > 0) {
      // Neither predicted nor linked (a link is a write to a node of its own, the cost that counts).
      if (--this.#paused === 0) {
        this.#learning = LEARNING_FINDS;
        this.#last = undefined;
      }
      return this.#lookUp(event);
    }
    const last = this.#last;
    const predicted = last?.after;
    if (predicted !== undefined) {
      if (this.#holds(predicted, event)) {
        this.#last = predicted;
        this.#misses = 0;
        return predicted;
      }
      if (++this.#misses >= MISSES_BEFORE_PAUSE && this.#learning === 0) {
        this.#misses = 0;
        this.#paused = PAUSED_FINDS;
      }
    }
    if (this.#learning > 0) this.#learning--;
    const found = this.#lookUp(event);
    if (typeof found === "string") {
      this.#last = undefined;
      return found;
    }
    // `last` is of the current tree: after a start over, #lookUp returns a string.
    if (last !== undefined && last.after !== found) last.after = found;
    this.#last = found;
    return found;
  }

  /** Whether `event`'s values are those of `node`'s key (compared strictly: NaN is looked up). */
  #holds(node: KeyNode, event: Event): boolean {
    const fields = this.fields;
    const count = fields.length;
    // The first two fields are read where each sees one name (an index's), not through a reader
    // shared by every field of every stream: a read of a known field of a known shape.
    const first = this.#first;
    if (count > 0 && (first === undefined ? fields[0]?.read(event) : event[first]) !== node.firstValue) return false;
    const second = this.#second;
    if (count > 1 && (second === undefined ? fields[1]?.read(event) : event[second]) !== node.secondValue) return false;
    if (count <= 2) return true;
    const values = node.values;
    for (let i = 2; i < count; i++) if (fields[i]?.read(event) !== values[i]) return false;
    return true;
  }

  /** The key of `event` found field by field (see {@link find}). */
  #lookUp(event: Event): KeyNode | string {
    const fields = this.fields;
    let node = this.#root;
    for (let i = 0; i < fields.length; i++) {
      const field = fields[i];
      if (field === undefined) break;
      const value = field.read(event);
      // An object or an array would be a new one each time: its key is not remembered.
      if (typeof value === "object" && value !== null) return keyOf(fields, event);
      node.next ??= new Map();
      let next = node.next.get(value);
      if (next === undefined) {
        if (++this.#remembered > REMEMBERED_KEYS) {
          this.#root = rootNode();
          this.#remembered = 0;
          this.#last = undefined;
          return keyOf(fields, event);
        }
        const values = [...node.values, value];
        next = {
          key: node.key + keyPart(field.name, value),
          entry: undefined,
          next: undefined,
          values,
          firstValue: values[0],
          secondValue: values[1],
          after: undefined,
        };
        node.next.set(value, next);
      }
      node = next;
    }
    return node;
  }
}

function rootNode(): KeyNode {
  return {
    key: "",
    entry: undefined,
    next: new Map(),
    values: [],
    firstValue: undefined,
    secondValue: undefined,
    after: undefined,
  };
}

/** The key of `event` built anew. */
function keyOf(fields: readonly KeyField[], event: Event): string {
  let key = "";
  for (const { name, read } of fields) key += keyPart(name, read(event));
  return key;
}

/** A field's part of a key: nothing when it is absent. */
function keyPart(name: string, value: unknown): string {
  if (value === undefined) return "";
  return `${name}${FIELD_SEPARATOR}${typeof value === "string" ? value : JSON.stringify(value)}${ENTRY_SEPARATOR}`;
}

/** An indexed event; updated in place when its key gets a newer event (no allocation per put). */
interface Entry {
  readonly key: string;
  event: Event;
  time: number;
  /** Whether it is in the index: false once removed (a {@link KeySlot} may still hold it). */
  live: boolean;
}

/** The event of a removed entry: a slot that still holds the entry does not keep its event alive. */
const REMOVED: Event = Object.freeze({});

/** The latest event per key of one stream. */
export class StreamIndex {
  readonly #entries = new Map<string, Entry>();
  #currentTime = 0;

  /** @param maxSize the most keys kept (`streams.max-index-size`) */
  constructor(readonly maxSize: number = Number.POSITIVE_INFINITY) {}

  /** The index clock in seconds; 0 before the first indexed event. */
  get currentTime(): number {
    return this.#currentTime;
  }

  /** How many events the index holds (`stream_index_size`). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Stores an event under `key` (built by the `index` action from the listed fields; a
   * {@link KeySlot} of {@link IndexKeys} holds the entry stored under it last time), or removes
   * the key when the event's state is `expired`. Events without a numeric time are not indexed, nor
   * events with a new key once the index holds `maxSize` keys.
   * @returns false when the event has no time or the index is full
   */
  put(key: string | KeySlot, event: Event): boolean {
    const time = timeOf(event);
    if (time === undefined) return false;
    if (time > this.#currentTime) this.#currentTime = time;
    const slot = typeof key === "string" ? undefined : key;
    const held = slot?.entry;
    if (event.state !== "expired" && held !== undefined && held.live) {
      held.event = event;
      held.time = time;
      return true;
    }
    const name = typeof key === "string" ? key : key.key;
    const entry = this.#entries.get(name);
    if (event.state === "expired") {
      if (entry !== undefined) this.#remove(entry);
    } else if (entry !== undefined) {
      // The key keeps its place in the map, as a `set` of an existing key would.
      entry.event = event;
      entry.time = time;
      if (slot !== undefined) slot.entry = entry;
    } else if (this.#entries.size >= this.maxSize) {
      return false;
    } else {
      const added: Entry = { key: name, event, time, live: true };
      this.#entries.set(name, added);
      if (slot !== undefined) slot.entry = added;
    }
    return true;
  }

  /** Takes `entry` out of the index. */
  #remove(entry: Entry): void {
    this.#entries.delete(entry.key);
    entry.live = false;
    entry.event = REMOVED;
  }

  /** Every indexed event matching `predicate`, sorted by time then key. */
  search(predicate: Predicate): Event[] {
    const found: Entry[] = [];
    for (const entry of this.#entries.values()) if (predicate(entry.event)) found.push(entry);
    found.sort((a, b) => a.time - b.time || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return found.map((entry) => entry.event);
  }

  /**
   * The indexed events matching `predicate`, as {@link search} finds them, without holding the event
   * loop and without collecting more than `limit`: the entries are examined a slice at a time, the
   * loop turning after each `sliceMs` of work (other requests and pushes run in between, so an
   * entry replaced meanwhile is seen replaced, one added may be seen or not), and the search stops
   * at the first match beyond `limit`.
   * @param sliceMs milliseconds of work between two turns of the event loop
   * @returns the matches sorted by time then key, or undefined when more than `limit` match
   */
  async searchAtMost(predicate: Predicate, limit: number, sliceMs: number): Promise<Event[] | undefined> {
    const found: Entry[] = [];
    let sliceStart = performance.now();
    let examined = 0;
    for (const entry of this.#entries.values()) {
      if (predicate(entry.event)) {
        if (found.length === limit) return undefined;
        // A copy: an entry updated while the loop turns must not change what was found.
        found.push({ key: entry.key, event: entry.event, time: entry.time, live: false });
      }
      if (++examined % ENTRIES_PER_CHECK === 0 && performance.now() - sliceStart > sliceMs) {
        await nextTurn();
        sliceStart = performance.now();
      }
    }
    found.sort((a, b) => a.time - b.time || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return found.map((entry) => entry.event);
  }

  /** Removes and returns the events expired at clock `now` (seconds), sorted by time then key. */
  removeExpired(now: number): Event[] {
    const expired: Entry[] = [];
    for (const entry of this.#entries.values()) {
      if (isExpired(entry.event, now)) expired.push(entry);
    }
    expired.sort((a, b) => a.time - b.time || (a.key < b.key ? -1 : 1));
    const events = expired.map((entry) => entry.event);
    for (const entry of expired) this.#remove(entry);
    return events;
  }
}
