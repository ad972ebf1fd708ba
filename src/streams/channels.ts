/**
 * Publish/subscribe channels (docs/streams.md): the `publish` action, and the `index` action on
 * channel `<stream>-index`, send events to the WebSocket subscribers of a channel. Domain code: the
 * hub knows sockets only through {@link SubscriberSocket}, which the route implements over `ws`.
 *
 * - Publishing never waits and never buffers in the hub: each event is serialised once (JSON, then
 *   one Buffer) and handed to every matching subscriber's socket as a text frame. Sockets that can
 *   cork are corked at their first frame and uncorked once the event loop has run the I/O callbacks
 *   at hand (`setImmediate`): the events of a pushed batch, and of every push read in the same
 *   loop turn, cost one system call per subscriber rather than one per event. The busier the
 *   server, the larger these batches: the fan-out cost per event falls as the load grows.
 * - A subscriber whose socket buffer holds more than `bufferLimitBytes` (1 MiB) misses events,
 *   counted in `stream_publish_dropped_total{channel}`; one that stays over the limit for
 *   `slowCloseMs` (30 s) is closed with 1008 (policy violation, RFC 6455 §7.4.1).
 * - One timer pings every subscriber every `pingIntervalMs` (30 s); one that did not answer the
 *   previous ping with a pong (RFC 6455 §5.5.2–5.5.3) is terminated.
 * - One client (a token, or a client address without tokens) holds at most
 *   `maxSubscriptionsPerClient` subscriptions; one more is closed with 1008. A connection carries
 *   exactly one subscription (the channel of its URL; what the client sends is never read), so the
 *   bound per connection is one.
 * - Matching events against subscribers' queries is bounded, so that publishing never holds the
 *   event loop for long: one evaluation's regular expressions read at most `regexAllowance`
 *   characters (`streams.max-event-size`), and once `matchBudgetMs` (20 ms) were spent matching in
 *   a turn of the event loop, subscribers with a query miss the events published until the next
 *   turn. Either way the miss is counted in `stream_publish_dropped_total{channel}`.
 */
import type { Flow } from "./action.js";
import { matchWithin, type Predicate, RegexAllowanceError } from "./condition.js";
import type { Event } from "./event.js";
import type { ChannelMetrics } from "./metrics.js";

/**
 * Close codes the hub sends: RFC 6455 §7.4.1, and 1013 from the IANA WebSocket Close Code Number
 * registry (RFC 6455 §11.7).
 */
export const CloseCode = {
  /** 1001: the server is stopping. */
  goingAway: 1001,
  /**
   * 1008: the subscriber broke a rule (stayed over the buffer limit too long, or its client holds
   * as many subscriptions as one may).
   */
  policyViolation: 1008,
  /** 1013: Try Again Later, the server holds as many subscribers as it accepts. */
  tryAgainLater: 1013,
} as const;

/**
 * What the hub needs of a WebSocket: the route wraps a server-side `ws` WebSocket and its TCP
 * connection (for `cork`); tests fake it. The hub listens to `pong` and `close` itself; what the
 * client sends is not read.
 */
export interface SubscriberSocket {
  /** Bytes queued for sending and not yet handed to the kernel. */
  readonly bufferedAmount: number;
  /** Queues one frame; `{binary: false}` makes it a text frame. Never waits. */
  send(data: Buffer, options: { readonly binary: boolean }): void;
  /** Sends a ping frame; the peer answers with a pong. */
  ping(): void;
  /** Starts the closing handshake with a code and a reason of at most 123 bytes. */
  close(code: number, reason: string): void;
  /** Destroys the connection without a closing handshake. */
  terminate(): void;
  on(event: "pong" | "close", listener: () => void): unknown;
  /**
   * Optional (Node's `Writable.cork`/`uncork` of the connection): frames sent between `cork` and
   * `uncork` are written together, in one system call. Calls nest.
   */
  cork?(): void;
  uncork?(): void;
}

/** Options of {@link ChannelHub}. */
export interface ChannelHubOptions {
  readonly metrics: ChannelMetrics;
  /** Subscribers the hub holds at once, every channel together (`streams.max-subscribers`). */
  readonly maxSubscribers: number;
  /**
   * Subscriptions one client holds at once, every channel together
   * (`streams.max-subscriptions-per-client`); default {@link defaultSubscriptionsPerClient}.
   */
  readonly maxSubscriptionsPerClient?: number | undefined;
  /** A subscriber whose socket buffers more than this many bytes misses events; default 1 MiB. */
  readonly bufferLimitBytes?: number;
  /** How long a subscriber may stay over the buffer limit before it is closed, in ms; default 30 000. */
  readonly slowCloseMs?: number;
  /** Time between two pings, in ms; default 30 000. */
  readonly pingIntervalMs?: number;
  /** A monotonic clock in ms (tests give a fake one); default `performance.now`. */
  readonly clock?: () => number;
  /** Milliseconds of matching per turn of the event loop (`streams.publish-match-budget`); default 20. */
  readonly matchBudgetMs?: number;
  /** Characters one evaluation's regular expressions may read (`streams.max-event-size`); default 1 MiB. */
  readonly regexAllowance?: number;
  /**
   * Called when a channel gets its first subscriber (`true`) and when it loses its last (`false`):
   * what publishes only while someone listens (a stream's tap) starts and stops there.
   */
  readonly onActivity?: (channel: string, active: boolean) => void;
}

/**
 * Who holds a subscription, for the bound per client: the token that opened it (with
 * `security.require-token`), or else the client's address. `id` is compared only, never shown: the
 * route gives a digest of the token, not the token.
 */
export interface SubscriberClient {
  readonly kind: "token" | "address";
  readonly id: string;
}

/**
 * The default bound per client: a quarter of `maxSubscribers`, at most 100 and at least 1, so that
 * no single client can take every slot of the server.
 */
export function defaultSubscriptionsPerClient(maxSubscribers: number): number {
  return Math.max(1, Math.min(100, Math.floor(maxSubscribers / 4)));
}

/** The subscriptions one client holds now. */
interface ClientCount {
  readonly key: string;
  count: number;
}

/** One subscriber of one channel. */
interface Subscriber {
  readonly socket: SubscriberSocket;
  /** Its client's count, `undefined` for a subscriber the route did not attribute (tests). */
  readonly client: ClientCount | undefined;
  /** Only events it accepts are sent; `undefined` sends every event. */
  readonly matches: Predicate | undefined;
  readonly channel: Channel;
  /** Its slot in `channel.subscribers`; -1 once removed. */
  slot: number;
  /** Whether a pong came since the last ping. */
  alive: boolean;
  /** Clock time (ms) since which its buffer is over the limit; -1 when it is not. */
  overSince: number;
  /** Whether its socket is corked until the hub's next flush. */
  corked: boolean;
}

/**
 * The subscribers of one channel and its metric children. The children are resolved at the first
 * publication, not at the first subscription: any client may subscribe to any channel name, but
 * only the channels streams publish to (bounded by their configurations) become series.
 */
interface Channel {
  readonly name: string;
  /** Dense, unordered: removal moves the last subscriber into the freed slot. */
  readonly subscribers: Subscriber[];
  published: (() => void) | undefined;
  dropped: (() => void) | undefined;
}

const MIB = 1024 * 1024;
/**
 * Bytes a corked socket may hold before they are written without waiting for the flush: a large
 * batch goes out in chunks of about this size instead of piling up towards the buffer limit.
 */
const CORK_BATCH_BYTES = 64 * 1024;
const DEFAULT_SLOW_CLOSE_MS = 30_000;
const DEFAULT_PING_INTERVAL_MS = 30_000;
const DEFAULT_MATCH_BUDGET_MS = 20;
/** Shared by every send: ws reads it and copies what it needs. */
const TEXT_FRAME = { binary: false } as const;
const defaultClock = () => performance.now();

/**
 * The channels of one server and their subscribers.
 *
 * @example
 * const hub = new ChannelHub({ metrics, maxSubscribers: 10_000 });
 * hub.subscribe("errors", socket, compileWhereQuery(query)); // from the route
 * const publish = hub.publisher("errors");                    // once per action instance
 * publish({ host: "a", state: "critical" });                  // per event: never waits
 */
export class ChannelHub {
  readonly #channels = new Map<string, Channel>();
  readonly #metrics: ChannelMetrics;
  readonly #maxSubscribers: number;
  readonly #maxPerClient: number;
  /** Subscriptions per client (`kind:id`), clients with at least one only. */
  readonly #clients = new Map<string, ClientCount>();
  readonly #bufferLimit: number;
  readonly #slowCloseMs: number;
  readonly #pingIntervalMs: number;
  readonly #clock: () => number;
  #count = 0;
  readonly #matchBudgetMs: number;
  readonly #regexAllowance: number;
  readonly #onActivity: ((channel: string, active: boolean) => void) | undefined;
  /** Milliseconds spent matching in this turn of the event loop; reset at the next turn. */
  #matchSpent = 0;
  readonly #resetMatchSpent = () => {
    this.#matchSpent = 0;
  };
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Subscribers corked since the last flush; the flush runs in the loop's check phase. */
  readonly #corked: Subscriber[] = [];
  /** Uncorks every corked socket: their frames leave in one write each. */
  readonly #flush = () => {
    const corked = this.#corked;
    for (let i = 0; i < corked.length; i++) {
      const subscriber = corked[i];
      if (subscriber === undefined) continue;
      subscriber.corked = false;
      subscriber.socket.uncork?.();
    }
    corked.length = 0;
  };

  constructor(options: ChannelHubOptions) {
    this.#metrics = options.metrics;
    this.#maxSubscribers = options.maxSubscribers;
    this.#maxPerClient = options.maxSubscriptionsPerClient ?? defaultSubscriptionsPerClient(options.maxSubscribers);
    this.#bufferLimit = options.bufferLimitBytes ?? MIB;
    this.#slowCloseMs = options.slowCloseMs ?? DEFAULT_SLOW_CLOSE_MS;
    this.#pingIntervalMs = options.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS;
    this.#clock = options.clock ?? defaultClock;
    this.#matchBudgetMs = options.matchBudgetMs ?? DEFAULT_MATCH_BUDGET_MS;
    this.#regexAllowance = options.regexAllowance ?? MIB;
    this.#onActivity = options.onActivity;
  }

  /** Whether a channel has at least one subscriber now. */
  hasSubscribers(channel: string): boolean {
    return this.#channels.has(channel);
  }

  /** Subscribers held now, every channel together. */
  get size(): number {
    return this.#count;
  }

  /** Whether one more subscriber would be accepted (not full, not closed). */
  hasRoom(): boolean {
    return !this.#closed && this.#count < this.#maxSubscribers;
  }

  /** Counts a subscription the route refused before the upgrade, {@link hasRoom} being false. */
  countRefusedFull(): void {
    this.#metrics.refused("max-subscribers");
  }

  /**
   * Adds an open socket to a channel's subscribers until it closes. A full hub closes the socket
   * with 1013 (Try Again Later), a closed one with 1001 (Going Away): the route checks
   * {@link hasRoom} before the upgrade, this covers upgrades that raced past that check. A client
   * that holds `maxSubscriptionsPerClient` subscriptions already gets 1008 (Policy Violation) and a
   * reason naming the bound. Nothing is returned: either way the socket is taken care of, and the
   * caller has nothing left to do.
   * @param channel a channel name (stream-name rule, checked by the route)
   * @param matches only events it accepts are sent; `undefined` for every event
   * @param client who subscribes; `undefined` leaves the subscription out of the bound per client
   */
  subscribe(channel: string, socket: SubscriberSocket, matches?: Predicate, client?: SubscriberClient): void {
    if (this.#closed) {
      socket.close(CloseCode.goingAway, "server stopping");
      return;
    }
    if (this.#count >= this.#maxSubscribers) {
      this.#metrics.refused("max-subscribers");
      socket.close(CloseCode.tryAgainLater, "too many subscribers");
      return;
    }
    let counted: ClientCount | undefined;
    if (client !== undefined) {
      counted = this.#clientCount(client);
      if (counted.count >= this.#maxPerClient) {
        this.#metrics.refused("max-subscriptions-per-client");
        socket.close(CloseCode.policyViolation, this.#perClientReason(client));
        return;
      }
    }
    let target = this.#channels.get(channel);
    if (target === undefined) {
      target = {
        name: channel,
        subscribers: [],
        published: undefined,
        dropped: undefined,
      };
      this.#channels.set(channel, target);
    }
    if (counted !== undefined) {
      if (counted.count === 0) this.#clients.set(counted.key, counted);
      counted.count++;
    }
    const subscriber: Subscriber = {
      socket,
      client: counted,
      matches,
      channel: target,
      slot: target.subscribers.length,
      alive: true,
      overSince: -1,
      corked: false,
    };
    target.subscribers.push(subscriber);
    this.#count++;
    if (target.subscribers.length === 1) this.#onActivity?.(channel, true);
    socket.on("pong", () => {
      subscriber.alive = true;
    });
    socket.on("close", () => this.#remove(subscriber));
    this.#startTimer();
  }

  /**
   * The publisher of a channel, resolved once per action instance: sends an event, or each event of
   * a list, to the channel's subscribers whose query matches; returns at once. The channel is
   * looked up per call, so a publisher made before anyone subscribed reaches later subscribers,
   * and a channel nobody listens to costs one map lookup.
   */
  publisher(channel: string): (value: Flow) => void {
    const channels = this.#channels;
    return (value) => {
      const target = channels.get(channel);
      if (target === undefined) return;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          const event = value[i];
          if (event !== undefined) this.#publish(target, event);
        }
      } else {
        this.#publish(target, value);
      }
    };
  }

  /** The count of a client's subscriptions; a new one (count 0, not kept yet) for a new client. */
  #clientCount(client: SubscriberClient): ClientCount {
    const key = `${client.kind}:${client.id}`;
    return this.#clients.get(key) ?? { key, count: 0 };
  }

  /** The close reason of a subscription beyond the bound per client (at most 123 bytes). */
  #perClientReason(client: SubscriberClient): string {
    const holder = client.kind === "token" ? "for this token" : "from this client address";
    return `too many subscriptions ${holder}: at most ${this.#maxPerClient} (streams.max-subscriptions-per-client)`;
  }

  /** Subscriber counts per channel with at least one subscriber (`stream_subscribers{channel}`). */
  *subscriberCounts(): Iterable<readonly [string, number]> {
    for (const channel of this.#channels.values()) {
      if (channel.subscribers.length > 0) yield [channel.name, channel.subscribers.length];
    }
  }

  /**
   * Stops the ping timer and closes every subscriber with 1001 (Going Away); later subscriptions
   * are closed at once. Safe to call more than once.
   */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    for (const channel of [...this.#channels.values()]) {
      for (const subscriber of [...channel.subscribers]) {
        this.#remove(subscriber);
        subscriber.socket.close(CloseCode.goingAway, "server stopping");
      }
    }
  }

  /**
   * Sends one event to a channel's matching subscribers. The hot path: no await, no logging, and no
   * allocation but the event's JSON and its Buffer, made only when a subscriber takes it.
   */
  #publish(channel: Channel, event: Event): void {
    const subscribers = channel.subscribers;
    if (subscribers.length === 0) return;
    this.#countPublished(channel);
    let data: Buffer | undefined;
    // Backwards: removing the current subscriber moves the last one, already served, into its slot.
    for (let i = subscribers.length - 1; i >= 0; i--) {
      const subscriber = subscribers[i];
      if (subscriber === undefined) continue;
      if (subscriber.matches !== undefined && !this.#accepts(subscriber.matches, event, channel)) continue;
      const socket = subscriber.socket;
      const buffered = socket.bufferedAmount;
      if (buffered > this.#bufferLimit) {
        this.#missed(subscriber);
        continue;
      }
      subscriber.overSince = -1;
      if (data === undefined) {
        data = serialise(event);
        if (data === undefined) {
          // Not JSON (a cycle, a BigInt from a bug): no subscriber can get it; count it once.
          this.#countDropped(channel);
          return;
        }
      }
      if (subscriber.corked) {
        if (buffered >= CORK_BATCH_BYTES) {
          socket.uncork?.();
          socket.cork?.();
        }
      } else if (socket.cork !== undefined) {
        socket.cork();
        subscriber.corked = true;
        this.#corked.push(subscriber);
        if (this.#corked.length === 1) setImmediate(this.#flush);
      }
      socket.send(data, TEXT_FRAME);
    }
  }

  /**
   * Whether a subscriber's query accepts the event, within the matching bounds (see the module's
   * documentation); beyond them, the subscriber misses it, counted as dropped.
   */
  #accepts(matches: Predicate, event: Event, channel: Channel): boolean {
    if (this.#matchSpent > this.#matchBudgetMs) {
      this.#countDropped(channel);
      return false;
    }
    if (this.#matchSpent === 0) setImmediate(this.#resetMatchSpent);
    const started = this.#clock();
    try {
      return matchWithin(matches, event, this.#regexAllowance);
    } catch (error) {
      if (!(error instanceof RegexAllowanceError)) throw error;
      this.#countDropped(channel);
      return false;
    } finally {
      // Never 0 once something was matched: the reset is scheduled once per turn.
      this.#matchSpent += Math.max(this.#clock() - started, Number.MIN_VALUE);
    }
  }

  /** A subscriber over the buffer limit misses an event; closed once over it for too long. */
  #missed(subscriber: Subscriber): void {
    this.#countDropped(subscriber.channel);
    const now = this.#clock();
    if (subscriber.overSince < 0) subscriber.overSince = now;
    else if (now - subscriber.overSince >= this.#slowCloseMs) this.#closeSlow(subscriber);
  }

  /** `stream_published_events_total{channel}` + 1; the child is resolved at the first event. */
  #countPublished(channel: Channel): void {
    if (channel.published === undefined) channel.published = this.#metrics.published(channel.name);
    channel.published();
  }

  /** `stream_publish_dropped_total{channel}` + 1; the child is resolved at the first drop. */
  #countDropped(channel: Channel): void {
    if (channel.dropped === undefined) channel.dropped = this.#metrics.dropped(channel.name);
    channel.dropped();
  }

  #closeSlow(subscriber: Subscriber): void {
    this.#remove(subscriber);
    subscriber.socket.close(CloseCode.policyViolation, "subscriber too slow: socket buffer over the limit");
  }

  #startTimer(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.#sweep(), this.#pingIntervalMs);
    // The timer alone must not keep the process alive.
    this.#timer.unref();
  }

  /**
   * The timer's round: terminates subscribers that did not answer the previous ping, pings the
   * others, and closes those over the buffer limit for too long even when nothing is published.
   */
  #sweep(): void {
    const now = this.#clock();
    for (const channel of [...this.#channels.values()]) {
      for (let i = channel.subscribers.length - 1; i >= 0; i--) {
        const subscriber = channel.subscribers[i];
        if (subscriber === undefined) continue;
        if (!subscriber.alive) {
          this.#remove(subscriber);
          subscriber.socket.terminate();
          continue;
        }
        if (subscriber.socket.bufferedAmount > this.#bufferLimit) {
          if (subscriber.overSince < 0) subscriber.overSince = now;
          else if (now - subscriber.overSince >= this.#slowCloseMs) {
            this.#closeSlow(subscriber);
            continue;
          }
        } else {
          subscriber.overSince = -1;
        }
        subscriber.alive = false;
        subscriber.socket.ping();
      }
    }
  }

  /** Removes a subscriber from its channel (idempotent); an emptied channel is forgotten. */
  #remove(subscriber: Subscriber): void {
    const slot = subscriber.slot;
    if (slot < 0) return;
    const subscribers = subscriber.channel.subscribers;
    const last = subscribers.pop();
    if (last !== undefined && last !== subscriber) {
      subscribers[slot] = last;
      last.slot = slot;
    }
    subscriber.slot = -1;
    this.#count--;
    const client = subscriber.client;
    if (client !== undefined && --client.count === 0) this.#clients.delete(client.key);
    if (subscribers.length === 0) {
      this.#channels.delete(subscriber.channel.name);
      this.#onActivity?.(subscriber.channel.name, false);
    }
  }
}

/**
 * The event's JSON as UTF-8 bytes, always valid UTF-8 as text frames must be (RFC 6455 §5.6): JSON
 * escapes lone surrogates (ES2019 well-formed JSON.stringify). `undefined` when it is not JSON.
 */
function serialise(event: Event): Buffer | undefined {
  let json: string | undefined;
  try {
    json = JSON.stringify(event);
  } catch {
    return undefined;
  }
  return json === undefined ? undefined : Buffer.from(json, "utf8");
}
