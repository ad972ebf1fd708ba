/**
 * The running streams: compiled configurations with their state and index, default routing,
 * reinjection between streams, and the per-stream counters (docs/streams.md). Plain
 * TypeScript: the HTTP plugin, the ingestion routes and `vigie stream test` all drive this class.
 */
import { errorMessage } from "../platform/errors.js";
import {
  DEFAULT_STREAM_LIMITS,
  type Destination,
  type EventCounter,
  type Flow,
  type Next,
  type Runtime,
  type StreamLimits,
  type TapSlot,
} from "./action.js";
import { type CompiledConfig, compileConfig } from "./compiler.js";
import { type EdnValue, parseEdn, toEdn } from "./edn.js";
import type { Event } from "./event.js";
import type { EventBound } from "./event-bounds.js";
import { type GraphNode, graphOf } from "./graph.js";
import { detachedIo, type StreamIo } from "./io.js";
import { PARTITION_COUNT, type Partitioner, partitionerOf, partitionKey } from "./partition.js";
import type { BoundsWording } from "./query-answer.js";
import type { FileStream } from "./storage.js";
import { StreamIndex } from "./stream-index.js";

/** How deep reinjection may nest (a stream reinjecting into itself would otherwise never end). */
export const MAX_REINJECT_DEPTH = 16;

/**
 * Where a stream comes from: the API (kept in memory, or persisted to the API streams directory, or
 * stored in the database in cluster mode) or a stream directory file, which the operator owns.
 */
export type StreamOrigin = { readonly kind: "api" } | { readonly kind: "file"; readonly file: string };

/** Observers of the engine: counters and logs. All optional; defaults do nothing. */
export interface EngineHooks {
  /** The counter of events entering a stream, resolved once per stream: called with a count. */
  events?(stream: string): (count: number) => void;
  /** The counter of events an action of a stream skipped, resolved once per action instance. */
  dropped?(stream: string, action: string): () => void;
  /**
   * The counter of events a way in refused because they exceeded an event bound, resolved once per
   * stream (the target, empty when unknown), way in (`push`, `riemann` …) and bound.
   */
  refused?(stream: string, input: string, bound: EventBound): (count: number) => void;
  /** Called when a stream is removed or replaced, to forget its metric series. */
  forget?(stream: string): void;
  /** Logs a value reaching an `info`/`debug`/`error` action. */
  log?(level: "info" | "debug" | "error", stream: string, value: Flow): void;
  /** Records a value reaching a `tap` action. */
  tap?(stream: string, name: string, value: Flow): void;
  /**
   * Where the events a stream's tap point sees go when the stream starts (`vigie stream tap`):
   * the watchers' sink while someone watches, else `undefined`. Later changes come through
   * {@link Stream.watch}.
   * @param point a `:tap-point` name, or `undefined` for the events entering the stream
   */
  tapSink?(stream: string, point: string | undefined): ((value: Flow) => void) | undefined;
}

const nothing = () => {};

/**
 * Cluster mode (docs/cluster.md): each stream has one owner instance; events for a stream this
 * instance does not own go to its owner through JetStream.
 */
export interface Forwarder {
  /**
   * Whether this instance owns now the stream (`name`) or the partition (`name#k`, for a stream
   * with `:partition-by`) that `key` names. Every method takes such a key.
   */
  owns(key: string): boolean;
  /**
   * Hands events to the owner of `name` (or of partition `name#k`): resolves once JetStream acknowledged them, rejects with
   * an UnavailableError (503) when it cannot. The events are serialised before it returns.
   */
  forward(name: string, events: readonly Event[]): Promise<void>;
  /** The same without waiting (event sink, reinjection): bounded, what cannot go is counted. */
  send(name: string, events: readonly Event[]): void;
  /**
   * Asks the owner of `name` to search its index with a Riemann query (the Riemann input's
   * queries, riemann/handler.ts); resolves with the events found, received within `bounds`
   * (a large answer comes in parts).
   * @throws UnavailableError when the owner does not answer within 2 s (or a part of its answer);
   *   QueryBoundError when the answer exceeds `bounds`
   */
  ask(
    name: string,
    query: { readonly kind: "riemann-search"; readonly query: string; readonly limit: number },
    bounds?: BoundsWording,
  ): Promise<unknown>;
}

/**
 * One part of a stream with its own state and index: the whole stream, or one partition of a
 * partitioned stream. `key` names its lease in cluster mode: the stream name, or `name#k`.
 */
export interface StreamPart {
  readonly key: string;
  /** The partition number, undefined for the whole (unpartitioned) stream. */
  readonly partition: number | undefined;
  readonly index: StreamIndex;
  /** Runs one event through this part's actions. */
  readonly entry: Next;
}

/** One running stream. */
export class Stream {
  /** The stream's parts: one, or {@link PARTITION_COUNT} for a stream with `:partition-by`. */
  readonly parts: StreamPart[];
  /** The partition of an event, for a partitioned stream. */
  readonly partitionOf: Partitioner | undefined;
  readonly #countEvents: (count: number) => void;
  readonly #dropException: () => void;
  /** Events received by each action (and emitted by those without children), by compiler slot. */
  readonly #counters: readonly EventCounter[];
  /** What watches the events entering the stream: its sink is `undefined` while nobody does. */
  readonly #entryTap: TapSlot;
  /** The tap points of the configuration, by name. */
  readonly #tapPoints = new Map<string, TapSlot>();
  readonly #build: (key: string, partition: number | undefined) => StreamPart;

  constructor(
    readonly name: string,
    /** The configuration's top map as received (EDN). */
    readonly config: EdnValue,
    readonly compiled: CompiledConfig,
    readonly origin: StreamOrigin,
    engine: StreamEngine,
    hooks: EngineHooks,
    limits: StreamLimits,
    io: StreamIo,
  ) {
    this.#countEvents = hooks.events?.(name) ?? nothing;
    this.#dropException = hooks.dropped?.(name, "exception") ?? nothing;
    this.#counters = Array.from({ length: compiled.slots }, () => ({ count: 0 }));
    this.#entryTap = { sink: hooks.tapSink?.(name, undefined) };
    for (const point of compiled.tapPoints) this.#tapPoints.set(point, { sink: hooks.tapSink?.(name, point) });
    this.#build = (key, partition) => {
      const index = new StreamIndex(limits.indexSize);
      const runtime: Runtime = {
        limits,
        stream: name,
        index,
        reinject: (destination, event) => engine.reinject(this, destination, event),
        log: (level, value) => hooks.log?.(level, name, value),
        tap: (tapName, value) => hooks.tap?.(name, tapName, value),
        dropped: (action) => hooks.dropped?.(name, action) ?? nothing,
        output: (output) => io.output(output, name),
        publish: (channel) => io.publish(channel, name),
        asyncQueue: (queue) => io.asyncQueue(queue, name),
        runsIo: io.runsIo,
        counter: (slot) => this.#counters[slot],
        tapPoint: (point) => this.#tapPoints.get(point),
      };
      return { key, partition, index, entry: compiled.build(runtime) };
    };
    const fields = compiled.partitionBy;
    this.partitionOf = fields === undefined ? undefined : partitionerOf(fields);
    this.parts =
      fields === undefined
        ? [this.#build(name, undefined)]
        : Array.from({ length: PARTITION_COUNT }, (_, k) => this.#build(partitionKey(name, k), k));
  }

  /**
   * Starts (with a sink) or stops (with `undefined`) sending the events entering the stream, or
   * those leaving the action of a tap point, to watchers.
   * @param point a `:tap-point` name, or `undefined` for the stream's entry
   * @returns false when the configuration has no such tap point
   */
  watch(point: string | undefined, sink: ((value: Flow) => void) | undefined): boolean {
    const slot = point === undefined ? this.#entryTap : this.#tapPoints.get(point);
    if (slot === undefined) return false;
    slot.sink = sink;
    return true;
  }

  /** Whether the configuration names this tap point. */
  hasTapPoint(point: string): boolean {
    return this.#tapPoints.has(point);
  }

  /** The action tree with the events each action received and emitted since the stream started. */
  graph(): GraphNode {
    return graphOf(this.compiled.graph, this.#counters);
  }

  /** Whether the stream receives pushes sent to `default`. */
  get isDefault(): boolean {
    return this.compiled.default;
  }

  /**
   * The index of an unpartitioned stream (of its first partition for a partitioned one: searches
   * go through {@link parts}).
   */
  get index(): StreamIndex {
    const part = this.parts[0];
    if (part === undefined) throw new Error("a stream has at least one part");
    return part.index;
  }

  /** The index clock in seconds: the largest of its parts'. */
  get currentTime(): number {
    let time = 0;
    for (const part of this.parts) if (part.index.currentTime > time) time = part.index.currentTime;
    return time;
  }

  /** How many events the indexes of its parts hold together. */
  get indexSize(): number {
    let size = 0;
    for (const part of this.parts) size += part.index.size;
    return size;
  }

  /** Sends events through the stream, in order (each to its partition); returns when every one went through. */
  push(events: readonly Event[]): void {
    this.#countEvents(events.length);
    const partitionOf = this.partitionOf;
    if (partitionOf === undefined) {
      const part = this.parts[0];
      if (part !== undefined) this.#run(part.entry, events);
      return;
    }
    const parts = this.parts;
    // While nobody taps the stream this is the only cost of tapping: one check per event.
    const tap = this.#entryTap.sink;
    for (const event of events) {
      try {
        if (tap !== undefined) tap(event);
        parts[partitionOf(event)]?.entry(event);
      } catch {
        this.#dropException();
      }
    }
  }

  /**
   * Sends events through one part (the events of a partition forwarded to its owner), in order.
   * @param partition the partition, undefined for an unpartitioned stream
   */
  pushPart(partition: number | undefined, events: readonly Event[]): void {
    const part = this.parts[partition ?? 0];
    if (part === undefined) return;
    this.#countEvents(events.length);
    this.#run(part.entry, events);
  }

  /** Sends one event through the stream (to its partition). */
  pushOne(event: Event): void {
    this.#countEvents(1);
    const part = this.parts[this.partitionOf === undefined ? 0 : this.partitionOf(event)];
    try {
      const tap = this.#entryTap.sink;
      if (tap !== undefined) tap(event);
      part?.entry(event);
    } catch {
      this.#dropException();
    }
  }

  /**
   * Splits events by partition, in order.
   * @returns per partition, its events (undefined when none), or undefined for an unpartitioned stream
   */
  split(events: readonly Event[]): Array<Event[] | undefined> | undefined {
    const partitionOf = this.partitionOf;
    if (partitionOf === undefined) return undefined;
    const groups = new Array<Event[] | undefined>(PARTITION_COUNT);
    for (const event of events) {
      const k = partitionOf(event);
      const group = groups[k];
      if (group === undefined) groups[k] = [event];
      else group.push(event);
    }
    return groups;
  }

  /**
   * Starts one partition again with fresh state and an empty index (cluster mode: its lease went
   * to another instance, which starts it empty; so does this one when it gets it back).
   */
  resetPart(partition: number): void {
    const part = this.parts[partition];
    if (part !== undefined) this.parts[partition] = this.#build(part.key, partition);
  }

  #run(entry: Next, events: readonly Event[]): void {
    // While nobody taps the stream this is the only cost of tapping: one check per event.
    const tap = this.#entryTap.sink;
    for (const event of events) {
      try {
        if (tap !== undefined) tap(event);
        entry(event);
      } catch {
        // An action must never abort a push; count what a bug let through.
        this.#dropException();
      }
    }
  }
}

/** The set of running streams. */
export class StreamEngine {
  readonly #streams = new Map<string, Stream>();
  #defaults: readonly Stream[] = [];
  #depth = 0;
  /** Counters of refused events, by stream, way in and bound (few: streams are few, ways in fixed). */
  readonly #refused = new Map<string, (count: number) => void>();
  /** Cluster mode: where events for streams owned elsewhere go (set by the streams module). */
  forwarder: Forwarder | undefined;

  constructor(
    readonly hooks: EngineHooks = {},
    /** The bounds of every stream's state. */
    readonly limits: StreamLimits = DEFAULT_STREAM_LIMITS,
    /** Where `output`, `publish` and `async-queue` send events, and the names they may use. */
    readonly io: StreamIo = detachedIo(),
  ) {}

  /**
   * Compiles a configuration against the engine's declared outputs and async queues.
   * @throws CompileError naming the node and the problem
   */
  compile(config: EdnValue): CompiledConfig {
    return compileConfig(config, this.io.declarations);
  }

  /**
   * Compiles and starts a stream, replacing any stream of that name (the new one starts with fresh
   * state and an empty index).
   * @param compiled the configuration compiled already, when the caller did
   * @throws CompileError when the configuration does not compile (nothing changes then)
   */
  add(name: string, config: EdnValue, origin: StreamOrigin, compiled = this.compile(config)): Stream {
    if (this.#streams.has(name)) this.#forget(name);
    const stream = new Stream(name, config, compiled, origin, this, this.hooks, this.limits, this.io);
    this.#streams.set(name, stream);
    this.#refreshDefaults();
    return stream;
  }

  /** Removes a stream; false when there is none of that name. */
  remove(name: string): boolean {
    const removed = this.#streams.delete(name);
    if (removed) {
      this.#forget(name);
      this.#refreshDefaults();
    }
    return removed;
  }

  /** Forgets the metric series of a stream removed or replaced, refused events included. */
  #forget(name: string): void {
    this.hooks.forget?.(name);
    const prefix = `${name}\u0000`;
    for (const key of this.#refused.keys()) if (key.startsWith(prefix)) this.#refused.delete(key);
  }

  /** The stream of that name, if any. */
  get(name: string): Stream | undefined {
    return this.#streams.get(name);
  }

  /** Every stream, in no particular order. */
  all(): IterableIterator<Stream> {
    return this.#streams.values();
  }

  /**
   * What cluster mode leases (docs/cluster.md): each stream's name, or `name#k` for each
   * partition of a partitioned stream; sorted.
   */
  leaseKeys(): string[] {
    return [...this.#streams.values()].flatMap((stream) => stream.parts.map((part) => part.key)).sort();
  }

  /** The names of the streams, sorted. */
  names(): string[] {
    return [...this.#streams.keys()].sort();
  }

  /** The streams with `:default true`. */
  get defaults(): readonly Stream[] {
    return this.#defaults;
  }

  /**
   * Counts events a way in refused (dropped from a batch) for exceeding an event bound, in
   * `stream_dropped_events_total{stream,action=<input>,reason=<bound>}`.
   * @param stream the target stream as the request named it (`default` included), or "" when the
   *   event itself named it (Riemann's `stream` attribute), so that no name from the network
   *   becomes a series
   * @param input the way in: `push`, `otlp`, `remote-write`, `riemann`, `event-sink`
   * @param count how many events it refused for that bound
   */
  refuse(stream: string, input: string, bound: EventBound, count = 1): void {
    const key = `${stream}\u0000${input}\u0000${bound}`;
    let counter = this.#refused.get(key);
    if (counter === undefined) {
      counter = this.hooks.refused?.(stream, input, bound) ?? nothing;
      this.#refused.set(key, counter);
    }
    counter(count);
  }

  /** Pushes events to every default stream (none is fine). */
  pushDefault(events: readonly Event[]): void {
    this.deliver(this.#defaults, events, false);
  }

  /**
   * Delivers events to streams: those this instance runs get them now; in cluster mode those
   * owned by another instance get them through their owner (forwarded first, so that they are
   * serialised before an action of a local stream can touch them), and the events of a partitioned
   * stream all go through JetStream to their partition's owner, this instance included, so that
   * the events of one key keep their order whichever instances received them.
   * @param wait whether the caller awaits the owners' acknowledgement (a client's request does)
   * @returns a promise when events went to another instance and `wait` is true; it rejects with
   *   an UnavailableError when one of them could not be handed over (the local pushes happened)
   */
  deliver(streams: readonly Stream[], events: readonly Event[], wait = true): Promise<void> | undefined {
    const forwarder = this.forwarder;
    if (forwarder === undefined) {
      for (const stream of streams) stream.push(events);
      return undefined;
    }
    let pending: Promise<void>[] | undefined;
    // The unpartitioned streams this instance runs, pushed once everything else was handed over.
    let here: Stream[] | undefined;
    const hand = (key: string, batch: readonly Event[]) => {
      if (!wait) forwarder.send(key, batch);
      else if (pending === undefined) pending = [forwarder.forward(key, batch)];
      else pending.push(forwarder.forward(key, batch));
    };
    for (const stream of streams) {
      const groups = stream.split(events);
      if (groups === undefined) {
        if (!forwarder.owns(stream.name)) hand(stream.name, events);
        else if (here === undefined) here = [stream];
        else here.push(stream);
        continue;
      }
      // A partition's events all go through JetStream, its owner's own included: run at once, they
      // could overtake the events of the same key that another instance forwarded just before.
      for (const [k, group] of groups.entries()) {
        const part = stream.parts[k];
        if (group !== undefined && part !== undefined) hand(part.key, group);
      }
    }
    if (here !== undefined) for (const stream of here) stream.push(events);
    const waiting: Promise<void>[] | undefined = pending;
    if (waiting === undefined) return undefined;
    return waiting.length === 1 ? waiting[0] : Promise.all(waiting).then(() => undefined);
  }

  /**
   * Delivers an event reinjected by an action of `from` (reinject, reaper). Nested reinjection
   * deeper than {@link MAX_REINJECT_DEPTH}, or into a stream that does not exist, is counted as
   * dropped by the `reinject` action of `from`.
   */
  reinject(from: Stream, destination: Destination, event: Event): void {
    if (this.#depth >= MAX_REINJECT_DEPTH) {
      this.#dropReinjected(from);
      return;
    }
    this.#depth += 1;
    try {
      // Into itself: here (the push may have come late through JetStream), or, for a partitioned
      // stream, to the event's partition, wherever it runs.
      if (destination.kind === "self") {
        if (from.partitionOf === undefined) from.pushOne(event);
        else this.#reinjectInto(from, event);
      } else if (destination.kind === "default") for (const stream of this.#defaults) this.#reinjectInto(stream, event);
      else {
        const target = this.#streams.get(destination.name);
        if (target === undefined) this.#dropReinjected(from);
        else this.#reinjectInto(target, event);
      }
    } finally {
      this.#depth -= 1;
    }
  }

  #reinjectInto(target: Stream, event: Event): void {
    const forwarder = this.forwarder;
    if (forwarder === undefined) {
      target.pushOne(event);
      return;
    }
    const partition = target.partitionOf?.(event);
    const key = partition === undefined ? target.name : (target.parts[partition]?.key ?? target.name);
    if (forwarder.owns(key)) target.pushPart(partition, [event]);
    else forwarder.send(key, [event]);
  }

  #dropReinjected(from: Stream): void {
    (this.hooks.dropped?.(from.name, "reinject") ?? nothing)();
  }

  #refreshDefaults(): void {
    this.#defaults = [...this.#streams.values()].filter((stream) => stream.isDefault);
  }
}

/**
 * Applies the streams of the stream directories to an engine (start-up and SIGHUP):
 * new streams compiled, changed ones recompiled (state reset), streams whose file entry disappeared
 * dropped, untouched ones kept with their state and index. Streams created through the API without
 * `:persist` are not touched.
 */
export function applyFileStreams(engine: StreamEngine, loaded: ReadonlyMap<string, FileStream>): void {
  for (const stream of [...engine.all()]) {
    if (stream.origin.kind === "file" && !loaded.has(stream.name)) engine.remove(stream.name);
  }
  for (const [name, entry] of loaded) {
    const running = engine.get(name);
    if (running?.origin.kind === "file" && toEdn(running.config) === entry.text) continue;
    engine.add(name, entry.config, { kind: "file", file: entry.file });
  }
}

/**
 * Starts the streams persisted through the API (the API streams directory) that are not running,
 * at start-up and on SIGHUP, after {@link applyFileStreams}. A running one is left as it is: the
 * API keeps its file and the running stream in step. A name that a stream directory file defines is
 * the operator's: its persisted stream is not started, and returned so that the caller can say so.
 * @returns the persisted streams left out, with the operator's file that defines each
 */
export function applyPersistedStreams(
  engine: StreamEngine,
  persisted: ReadonlyMap<string, FileStream>,
  files: ReadonlyMap<string, FileStream>,
): Array<{ readonly name: string; readonly file: string; readonly definedIn: string }> {
  const shadowed: Array<{ name: string; file: string; definedIn: string }> = [];
  for (const [name, entry] of persisted) {
    const operator = files.get(name);
    if (operator !== undefined) shadowed.push({ name, file: entry.file, definedIn: operator.file });
    else if (engine.get(name) === undefined) engine.add(name, entry.config, { kind: "api" });
  }
  return shadowed;
}

/** What applying shared streams logs (a pino logger fits). */
export interface SharedStreamsLogger {
  error(details: object, message: string): void;
}

/**
 * Cluster mode (docs/cluster.md): applies the streams stored by the API of any instance. Each
 * stored stream whose configuration differs from the running one is compiled and (re)started; each
 * API stream among `names` (or among all, when `names` is undefined) that is no longer stored is
 * removed. A stored configuration that no longer compiles (outputs renamed since), or whose name a
 * stream directory file defines (the operator's configuration wins), is logged and left out.
 * @param names the streams that changed, or undefined for all of them
 */
export function applySharedStreams(
  engine: StreamEngine,
  stored: ReadonlyArray<{ readonly name: string; readonly config: string }>,
  names: readonly string[] | undefined,
  logger: SharedStreamsLogger,
): void {
  const present = new Set(stored.map((stream) => stream.name));
  const candidates = names ?? [...engine.all()].map((stream) => stream.name);
  for (const name of candidates) {
    if (!present.has(name) && engine.get(name)?.origin.kind === "api") engine.remove(name);
  }
  for (const { name, config: text } of stored) {
    const running = engine.get(name);
    if (running?.origin.kind === "api" && toEdn(running.config) === text) continue;
    // A stream directory file defines it: the operator's configuration wins.
    if (running?.origin.kind === "file") {
      logger.error({ stream: name }, `stored stream ${name} was not started: ${running.origin.file} defines it`);
      continue;
    }
    try {
      const config = parseEdn(text);
      engine.add(name, config, { kind: "api" });
    } catch (error) {
      logger.error({ stream: name }, `stored stream ${name} was not started: ${errorMessage(error)}`);
    }
  }
}
