/**
 * The `streams:` section of the configuration (docs/streams.md): stream directories,
 * bounds of the streams' state, outputs, async queues and the Riemann protocol input. Unknown keys
 * are refused at every level (docs/configuration.md); URLs and header values may carry secrets and are
 * never echoed in an error (docs/configuration.md).
 */
import type { Duration } from "../platform/duration.js";
import { outputsSection } from "../platform/outputs/config.js";
import { compileLinearRegex, linearRegexPattern } from "../platform/regex.js";
import * as v from "../platform/validation.js";
import { DEFAULT_STREAM_LIMITS } from "./action.js";
import { DEFAULT_EVENT_BOUNDS } from "./event-bounds.js";
import { isStreamName, STREAM_NAME_RULE } from "./names.js";

const seconds = (count: number): Duration => ({ text: `${count}s`, milliseconds: count * 1000 });

/** A map from names following the stream-name rule to values checked by `entry`. */
function named<T>(entry: v.Validator<T>): v.Validator<Readonly<Record<string, T>>> {
  return (value, path) => {
    // The value is not echoed: it may hold URLs or headers with secrets.
    if (!v.isPlainObject(value)) throw new v.ValidationError(path, "must be a map from name to definition");
    const result: Record<string, T> = {};
    for (const [name, item] of Object.entries(value)) {
      if (!isStreamName(name)) throw new v.ValidationError(v.childPath(path, name), `the name ${STREAM_NAME_RULE}`);
      result[name] = entry(item, v.childPath(path, name));
    }
    return result;
  };
}

const asyncQueue = v.object({ size: v.withDefault(v.integer(1, 100_000_000), 10_000) }, { unknownKeys: "reject" });

/** A declared async queue (docs/streams.md). */
export type AsyncQueueDefinition = v.ShapeOf<{ size: v.Validator<number> }>;

/** A duration between 1 ms and 1 h: the delay of a timer that guards a connection. */
const timerDuration: v.Validator<Duration> = (value, path) => {
  const parsed = v.duration(1)(value, path);
  if (parsed.milliseconds > 3_600_000) throw new v.ValidationError(path, "must be at most 1h", value);
  return parsed;
};

const riemannObject = v.object(
  {
    enabled: v.withDefault(v.boolean(), false),
    host: v.withDefault(v.string({ min: 1 }), "127.0.0.1"),
    port: v.withDefault(v.integer(0, 65535), 5555),
    /**
     * A UDP port that also receives Riemann messages, one protobuf `Msg` per datagram, bound on
     * `host`; off when absent. Datagrams get no reply (as Riemann's UDP server); a query in one is
     * ignored. UDP needs no `enabled: true`: the TCP input and this port are independent.
     */
    "udp-port": v.optional(v.integer(0, 65535)),
    /** PEM files: the server certificate and key (TLS), and the CA that client certificates need. */
    "tls-cert": v.optional(v.string({ min: 1 })),
    "tls-key": v.optional(v.string({ min: 1 })),
    "tls-ca": v.optional(v.string({ min: 1 })),
    /**
     * Open connections at most, TLS handshakes in progress included; more are closed as they
     * arrive. The input's worst case by default: `max-buffered-bytes` (256 MiB) plus, per
     * connection, at most about 160 KiB besides what it buffers (socket and TLS state, about
     * 46 KiB measured for an idle TLS connection; Node's stream buffers; the last chunk read,
     * 64 KiB at most; memory the allocator keeps after connections close), so 1 000 × 160 KiB
     * ≈ 156 MiB, about 412 MiB in all, under 512 MiB. Measured: 1 000 TLS clients each sending
     * 1 MiB of a 16 MiB frame took the process from 73 MB to a peak of 474 MB.
     */
    "max-connections": v.withDefault(v.integer(1, 100_000), 1_000),
    /**
     * Open connections from one client address at most (TLS handshakes in progress included); more
     * from that address are closed as they arrive, so that one client cannot take every one of
     * `max-connections`. Idle connections have no deadline (collectd stays connected between its
     * intervals): this is what bounds them.
     */
    "max-connections-per-address": v.withDefault(v.integer(1, 100_000), 50),
    /** Largest frame (4-byte length prefix excluded); a larger one closes the connection. */
    "max-frame-size": v.withDefault(v.size(), 16 * 1024 * 1024),
    /**
     * Bytes that all connections together may hold for their clients: frames partly received,
     * frames received and not handled yet or being handled, replies the client has not read yet.
     * Beyond it the connection that has waited longest on its client (the oldest unfinished frame,
     * or the oldest reply not read) gets an error reply naming this key and is closed, until the
     * total is back under the limit; frames being handled are never cut. Without it, 1 000
     * connections each sending most of a 16 MiB frame would hold 16 GiB.
     */
    "max-buffered-bytes": v.withDefault(v.size(), 256 * 1024 * 1024),
    /**
     * How long a TLS client may take to complete its handshake once connected; past it (or when
     * the handshake fails) the socket is destroyed and its slot freed.
     */
    "handshake-timeout": v.withDefault(timerDuration, seconds(10)),
    /**
     * How long a frame may take to arrive once its first bytes did: past it the client gets an
     * error reply naming this key, what it sent of the frame is dropped, and the socket is closed
     * (destroyed at most 2 s later if the client does not close its side). 16 MiB within 30 s
     * needs about 4.5 Mbit/s; collectd and riemann-client send a message in one write. A
     * connection with nothing buffered has no deadline.
     */
    "frame-timeout": v.withDefault(timerDuration, seconds(30)),
    /**
     * Events a query may answer; a query matching more is answered with an error. Default: the
     * section's `streams.max-query-results` (this key predates it and stays accepted).
     */
    "max-query-results": v.optional(v.integer(1, 10_000_000)),
    /** The stream whose index queries search; default: the merged indexes of the default streams. */
    "query-stream": v.optional(v.string({ pattern: /^[A-Za-z0-9._-]{1,128}$/, patternRule: STREAM_NAME_RULE })),
  },
  { unknownKeys: "reject", optional: true },
);

/** The `streams.riemann` section (docs/streams.md). */
export type RiemannSettings = ReturnType<typeof riemannObject>;

/** `streams.riemann`: `tls-cert` and `tls-key` go together; `tls-ca` needs them. */
const riemann: v.Validator<RiemannSettings> = (value, path) => {
  const section = riemannObject(value, path);
  if ((section["tls-cert"] === undefined) !== (section["tls-key"] === undefined)) {
    const [missing, given] = section["tls-cert"] === undefined ? ["tls-cert", "tls-key"] : ["tls-key", "tls-cert"];
    throw new v.ValidationError(v.childPath(path, missing), `is required when ${given} is set (TLS needs both)`);
  }
  if (section["tls-ca"] !== undefined && section["tls-cert"] === undefined) {
    throw new v.ValidationError(
      v.childPath(path, "tls-cert"),
      "is required with tls-ca (client certificates need TLS)",
    );
  }
  return section;
};

const graphiteObject = v.object(
  {
    enabled: v.withDefault(v.boolean(), false),
    host: v.withDefault(v.string({ min: 1 }), "127.0.0.1"),
    port: v.withDefault(v.integer(0, 65535), 2003),
    /** The stream that receives the events; default: the default streams. */
    stream: v.optional(v.string({ pattern: /^[A-Za-z0-9._-]{1,128}$/, patternRule: STREAM_NAME_RULE })),
    /**
     * A regular expression (RE2 syntax, linear time) searched in each metric path: its first
     * capture group, when it matches and captured something, is the event's `host`; otherwise the
     * host is the client's address: `^servers\.([^.]+)\.` takes `web-1` from
     * `servers.web-1.cpu.load`.
     */
    "host-pattern": v.optional(linearRegexPattern),
    /** Open connections at most; more are closed as they arrive. */
    "max-connections": v.withDefault(v.integer(1, 100_000), 1_000),
    /**
     * Longest line in bytes, its end of line excluded: a connection that sends a longer one is
     * closed (what it sent before that line was taken). Graphite paths are short: 4 KiB is ample.
     */
    "max-line-length": v.withDefault(v.size(), 4096),
  },
  { unknownKeys: "reject", optional: true },
);

/** The `streams.graphite` section (docs/inputs.md). */
export type GraphiteSettings = ReturnType<typeof graphiteObject>;

/** `streams.graphite`: `host-pattern` must have a capture group, the host. */
const graphite: v.Validator<GraphiteSettings> = (value, path) => {
  const section = graphiteObject(value, path);
  const pattern = section["host-pattern"];
  if (pattern !== undefined && compileLinearRegex(pattern).groups < 1) {
    throw new v.ValidationError(v.childPath(path, "host-pattern"), "needs a capture group: the host", pattern);
  }
  return section;
};

/** The streams section of the configuration (besides `enabled`). */
export const streamsShape = {
  /**
   * Directories of streams files, the operator's: Vigie reads their `*.edn` files and never writes
   * them. Streams created through the API with `:persist true` go to the `.vigie-api`
   * subdirectory of the first one, which only Vigie writes.
   */
  directories: v.withDefault<string[]>(v.array(v.string({ min: 1 })), []),
  /** Body limit of pushes and ingestion (remote write, OTLP, line protocol), in bytes (docs/configuration.md). */
  "ingestion-body-limit": v.withDefault(v.size(), 32 * 1024 * 1024),
  /** The bounds of a stream's state (docs/configuration.md); see StreamLimits. */
  "max-index-size": v.withDefault(v.integer(1, 100_000_000), DEFAULT_STREAM_LIMITS.indexSize),
  "max-forks": v.withDefault(v.integer(1, 100_000_000), DEFAULT_STREAM_LIMITS.forks),
  "max-window-events": v.withDefault(v.integer(1, 100_000_000), DEFAULT_STREAM_LIMITS.windowEvents),
  /**
   * Fields of one event at most, counted at every depth (a key of `attributes` is a field; a
   * Riemann attribute is one). On every way in: a single-event push beyond is a 400, an event of a
   * batch (a push of `events`, OTLP, remote write, a Riemann message) is dropped and counted in
   * `stream_dropped_events_total{reason="max-event-fields"}`. So are the three bounds below.
   */
  "max-event-fields": v.withDefault(v.integer(1, 1_000_000), DEFAULT_EVENT_BOUNDS.fields),
  /** Items of an event's `tags` at most. */
  "max-event-tags": v.withDefault(v.integer(1, 1_000_000), DEFAULT_EVENT_BOUNDS.tags),
  /** UTF-8 bytes of one string of an event at most: a value, a tag or a field name. */
  "max-event-string": v.withDefault(v.size(), DEFAULT_EVENT_BOUNDS.string),
  /**
   * Bytes of one event at most: its field names and strings in UTF-8, and 8 bytes for every other
   * value (number, boolean, null, object, array), about the size of its JSON text.
   */
  "max-event-size": v.withDefault(v.size(), DEFAULT_EVENT_BOUNDS.size),
  /**
   * Events one index search (HTTP) or query (Riemann) answers at most; one matching more is
   * answered with an error naming this setting (`streams.riemann.max-query-results`, when set,
   * applies to Riemann queries instead).
   */
  "max-query-results": v.withDefault(v.integer(1, 10_000_000), DEFAULT_STREAM_LIMITS.queryResults),
  /**
   * Bytes of one search's or query's answer at most (its JSON, or its protobuf reply); beyond, an
   * error. In cluster mode it also bounds an answer received from another instance's owner, as its
   * parts arrive.
   */
  "max-query-bytes": v.withDefault(v.size(), DEFAULT_STREAM_LIMITS.queryBytes),
  /** Outputs by name (docs/streams.md). */
  outputs: v.withDefault(outputsSection, {}),
  /** Async queues by name (docs/streams.md). */
  "async-queues": v.withDefault(named(asyncQueue), {}),
  /** The Riemann protocol input, over TCP and UDP (docs/streams.md, docs/inputs.md). */
  riemann,
  /** The Graphite plaintext input (docs/inputs.md). */
  graphite,
  /** WebSocket subscribers an instance accepts at once, all channels together (docs/streams.md). */
  "max-subscribers": v.withDefault(v.integer(1, 1_000_000), 10_000),
  /**
   * WebSocket subscriptions one client holds at once, all channels together: per token with
   * `security.require-token`, per client address otherwise (the address `http.trust-proxy` gives).
   * One more is accepted, then closed with code 1008 and a reason naming this key. Each connection
   * carries one subscription. Default: a quarter of `max-subscribers`, at most 100 and at least 1.
   */
  "max-subscriptions-per-client": v.optional(v.integer(1, 1_000_000)),
  /**
   * Time spent matching published events against subscribers' queries (`?query=`) per turn of the
   * event loop at most: beyond, subscribers with a query miss the events published until the next
   * turn, counted in `stream_publish_dropped_total{channel}`, so that expensive queries (regular
   * expressions over long strings) cannot hold the server. Subscribers without a query are not
   * affected.
   */
  "publish-match-budget": v.withDefault(v.duration(1), { text: "20ms", milliseconds: 20 }),
  /** How long a graceful stop waits for the outputs' queues to empty. */
  "drain-timeout": v.withDefault(v.duration(0), seconds(5)),
};
