/**
 * The subscription route (docs/streams.md): `GET /api/v1/channel/<channel>` with a WebSocket
 * upgrade (RFC 6455 §4) subscribes to a channel, optionally filtered by `?query=<base64
 * where-condition>`.
 *
 * Everything is decided before the upgrade, by Fastify hooks, so a refusal is an ordinary HTTP
 * answer in the error format and no socket is ever opened for it: the platform's Host (421) and
 * cross-origin (403) checks (onRequest), the token guard with `security.require-token` (401/403,
 * the token in `Authorization` or `?token=`), the channel name and the query (400), and the
 * subscriber limit (503). A plain GET is answered 426 with `Upgrade: websocket`. The bound per
 * client is the hub's, after the upgrade (a close with 1008, which a browser page can read): the
 * route tells it who subscribes, the token (a digest of it) when the guard checked one, else the
 * client address (`request.ip`, which `http.trust-proxy` may take from `X-Forwarded-For`).
 *
 * The tap route, `GET /api/v1/stream/<name>/tap[?point=<tap point>]`, is the same subscription on
 * the channel of a stream's tap (channels-tap.ts), answered 404 for an unknown stream or tap point.
 *
 * The URL may hold a token: nothing here logs it (nor the URL).
 */
import { createHash } from "node:crypto";
import { Socket } from "node:net";
import websocket, { type WebSocket } from "@fastify/websocket";
import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler, preHandlerHookHandler } from "fastify";
import { readToken } from "../../platform/auth.js";
import { InvalidError, UnavailableError, VigieError } from "../../platform/errors.js";
import type { RouteDescription } from "../../platform/openapi.js";
import { queryOf, queryString } from "../../platform/query.js";
import { isPlainObject } from "../../platform/validation.js";
import type { ChannelHub, SubscriberClient, SubscriberSocket } from "../channels.js";
import type { Taps } from "../channels-tap.js";
import type { Predicate } from "../condition.js";
import { isStreamName, STREAM_NAME_RULE } from "../names.js";
import { WHERE_QUERY } from "./streams-api.js";
import { compileWhereQuery, whereQueryParameter } from "./where-query.js";

/** What the routes need. */
export interface ChannelRoutesOptions {
  readonly hub: ChannelHub;
  /** The streams' taps: the tap route, registered when given, subscribes to their channels. */
  readonly taps?: Pick<Taps, "channelOf">;
  /** Runs before the upgrade when `security.require-token` is true; `undefined` leaves it open. */
  readonly guard: preHandlerHookHandler | undefined;
  /**
   * Idle time after which a connection that came in as an upgrade request but was answered with
   * plain HTTP is destroyed, in ms; default 10 000.
   */
  readonly idleUpgradeMs?: number;
}

/** The route's path; `:channel` follows the stream-name rule. */
export const CHANNEL_ROUTE = "/api/v1/channel/:channel";

/** The tap route's path: `:name` is a running stream. */
export const TAP_ROUTE = "/api/v1/stream/:name/tap";

/**
 * Largest frame accepted from a subscriber, in bytes. Subscribers only receive; this leaves room
 * for control frames (at most 125 bytes, RFC 6455 §5.5) and a stray message, which is ignored.
 */
const MAX_CLIENT_PAYLOAD = 1024;

/**
 * How long a closing handshake may take before the connection is destroyed, in ms: a subscriber
 * closed for being slow is often not reading, and a stop must not wait for ws's 30 s default.
 */
const CLOSE_TIMEOUT_MS = 5_000;

/**
 * How long a connection that came in as an upgrade may stay idle before it is destroyed, in ms.
 * Node hands every request carrying `Upgrade` to the `upgrade` listener, whatever its path, and
 * detaches its connection from the HTTP server's timeouts and keep-alive. The platform closes one
 * once it is answered with plain HTTP (src/server.ts); this bounds the others, such as a client
 * that sends an upgrade request and then nothing more.
 */
const DEFAULT_IDLE_UPGRADE_MS = 10_000;

/** Servers whose upgrade connections are already bounded (one listener per server). */
const boundedServers = new WeakSet<object>();

/**
 * The route's entry in `GET /openapi.json`: its success is the upgrade (101); a GET without one is
 * answered 426, in the error format, as every refusal before the upgrade.
 */
const subscribe: RouteDescription = {
  summary: "subscribe to a channel over a WebSocket (101 Switching Protocols; 426 without an upgrade)",
  query: {
    query: WHERE_QUERY,
    token: { type: "string", description: "a registry token, for browsers (with security.require-token)" },
  },
  success: { status: 101, description: "switching protocols: the subscription's WebSocket" },
  // 503: the server holds as many subscribers as it accepts.
  errors: [503],
};

/** The tap route's entry in `GET /openapi.json`. */
const tap: RouteDescription = {
  summary:
    "watch the events entering a stream, or leaving the action of one of its :tap-point, over a WebSocket (101; 426 without an upgrade)",
  query: {
    point: {
      type: "string",
      pattern: "^[A-Za-z0-9._-]{1,128}$",
      description: "a :tap-point of the stream's configuration; without it, the events entering the stream",
    },
    query: WHERE_QUERY,
    token: { type: "string", description: "a registry token, for browsers (with security.require-token)" },
  },
  success: { status: 101, description: "switching protocols: the tap's WebSocket, one event per text frame" },
  // 404: no such stream or tap point; 503: the server holds as many subscribers as it accepts.
  errors: [404, 503],
};

/** What the hooks decided for a subscription, handed to the WebSocket handler. */
interface Subscription {
  readonly channel: string;
  readonly matches: Predicate | undefined;
  readonly client: SubscriberClient;
}

/**
 * Registers `@fastify/websocket` (once per server: it listens to the server's `upgrade` event),
 * the subscription route and the tap route (`GET /api/v1/stream/<name>/tap[?point=<tap point>]`,
 * the same subscription on the stream's tap channel).
 */
export async function channelRoutes(app: FastifyInstance, options: ChannelRoutesOptions): Promise<void> {
  const { hub, guard } = options;
  const idleUpgradeMs = options.idleUpgradeMs ?? DEFAULT_IDLE_UPGRADE_MS;
  // Before the plugin's own preClose (which closes every client without a code): subscribers get
  // 1001 Going Away (RFC 6455 §7.4.1) when the server stops.
  app.addHook("preClose", (done) => {
    hub.close();
    done();
  });
  if (!app.hasPlugin("@fastify/websocket")) {
    // A variable, not a literal: @types/ws 8.18 does not declare `closeTimeout` yet (ws 8.23 reads it).
    const server = { maxPayload: MAX_CLIENT_PAYLOAD, closeTimeout: CLOSE_TIMEOUT_MS, perMessageDeflate: false };
    await app.register(websocket, {
      options: server,
      // A subscriber that disconnects uncleanly is routine: no error log, and never the URL.
      errorHandler: (error, socket, request) => {
        request.log.debug({ err: error }, "subscriber connection failed");
        socket.terminate();
      },
    });
  }

  if (!boundedServers.has(app.server)) {
    boundedServers.add(app.server);
    // Prepended: runs before the plugin dispatches the request, so that an upgrade completed at
    // once clears the timeout afterwards (wsHandler below) rather than the other way round.
    app.server.prependListener("upgrade", (_request, socket) => {
      if (socket instanceof Socket) socket.setTimeout(idleUpgradeMs, () => socket.destroy());
    });
  }

  const subscriptions = new WeakMap<FastifyRequest, Subscription>();
  /** Decides a subscription before the upgrade; `channelOf` reads (and checks) the channel. */
  const prepare =
    (channelOf: (request: FastifyRequest) => string): preHandlerAsyncHookHandler =>
    async (request) => {
      const channel = channelOf(request);
      const query = whereQueryParameter(queryOf(request.query));
      const matches = query === undefined ? undefined : compileWhereQuery(query);
      if (request.ws) {
        if (!hub.hasRoom()) {
          hub.countRefusedFull();
          throw new UnavailableError("too many WebSocket subscribers: the server accepts no more for now");
        }
        subscriptions.set(request, { channel, matches, client: clientOf(request, guard !== undefined) });
      }
    };
  const channelOf = (request: FastifyRequest) => {
    const channel = stringParameter(request.params, "channel") ?? "";
    if (!isChannelName(channel)) throw new InvalidError(`channel name ${STREAM_NAME_RULE}`);
    return channel;
  };
  const taps = options.taps;
  /** The channel of the tap a request names (`:name`, `?point=`); 404 for an unknown one. */
  const tapChannelOf = (streams: Pick<Taps, "channelOf">) => (request: FastifyRequest) => {
    const name = stringParameter(request.params, "name") ?? "";
    const point = queryString(queryOf(request.query), "point");
    if (point !== undefined && !isStreamName(point)) throw new InvalidError(`field point: ${STREAM_NAME_RULE}`);
    return streams.channelOf(name, point);
  };
  const upgradeRequired = async () => {
    throw new VigieError(
      "VIGIE_ERR_UPGRADE_REQUIRED",
      "this route needs a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)",
      { Upgrade: "websocket", Connection: "Upgrade" },
    );
  };
  const wsHandler = (socket: WebSocket, request: FastifyRequest) => {
    // Under app.injectWS() (tests) the connection is a stream pair, not a TCP socket.
    const raw: unknown = request.raw.socket;
    const connection = raw instanceof Socket ? raw : undefined;
    // An open subscription may stay idle between events: the hub's pings decide when it is dead.
    connection?.setTimeout(0);
    const subscription = subscriptions.get(request);
    subscriptions.delete(request);
    // Cannot happen (prepare runs before every upgrade); close rather than serve unfiltered.
    if (subscription === undefined) socket.close(1011, "subscription not prepared");
    else {
      const subscriber = new WebSocketSubscriber(socket, connection);
      hub.subscribe(subscription.channel, subscriber, subscription.matches, subscription.client);
    }
  };
  const preHandler = (decide: preHandlerAsyncHookHandler) => (guard === undefined ? [decide] : [guard, decide]);

  app.route({
    method: "GET",
    url: CHANNEL_ROUTE,
    preHandler: preHandler(prepare(channelOf)),
    config: { openapi: subscribe },
    handler: upgradeRequired,
    wsHandler,
  });
  if (taps !== undefined) {
    app.route({
      method: "GET",
      url: TAP_ROUTE,
      preHandler: preHandler(prepare(tapChannelOf(taps))),
      config: { openapi: tap },
      handler: upgradeRequired,
      wsHandler,
    });
  }
}

/**
 * A `ws` socket as the hub sees it, with the corking of its TCP connection: ws writes every frame
 * to that connection, so frames sent while it is corked leave together (Node's Writable.cork).
 * Without a TCP connection (`app.injectWS()`), corking does nothing.
 */
class WebSocketSubscriber implements SubscriberSocket {
  readonly #socket: WebSocket;
  readonly #connection: Socket | undefined;

  constructor(socket: WebSocket, connection: Socket | undefined) {
    this.#socket = socket;
    this.#connection = connection;
  }

  get bufferedAmount(): number {
    return this.#socket.bufferedAmount;
  }
  send(data: Buffer, options: { readonly binary: boolean }): void {
    this.#socket.send(data, options);
  }
  ping(): void {
    this.#socket.ping();
  }
  close(code: number, reason: string): void {
    this.#socket.close(code, reason);
  }
  terminate(): void {
    this.#socket.terminate();
  }
  on(event: "pong" | "close", listener: () => void): void {
    this.#socket.on(event, listener);
  }
  cork(): void {
    this.#connection?.cork();
  }
  uncork(): void {
    this.#connection?.uncork();
  }
}

/**
 * Whether a channel can be subscribed to: a name following the stream-name rule, or the index
 * channel `<stream>-index` of any stream, whose name may be 128 characters long itself.
 */
function isChannelName(channel: string): boolean {
  return (
    isStreamName(channel) || (channel.endsWith(INDEX_SUFFIX) && isStreamName(channel.slice(0, -INDEX_SUFFIX.length)))
  );
}

const INDEX_SUFFIX = "-index";

/**
 * Who subscribes: with tokens (the guard let the request through), the token, by its SHA-256
 * digest so that no token stays in memory; without, the client address. The token is read where
 * the guard reads it: `Authorization`, else `?token=`.
 */
function clientOf(request: FastifyRequest, byToken: boolean): SubscriberClient {
  if (byToken) {
    // A repeated ?token= never gets here: the guard refuses it as missing.
    const token = readToken(request.headers.authorization) ?? queryString(queryOf(request.query), "token");
    if (token !== undefined) return { kind: "token", id: createHash("sha256").update(token).digest("base64url") };
  }
  return { kind: "address", id: request.ip };
}

/** A string parameter of `request.params`, or `undefined`. */
function stringParameter(params: unknown, name: string): string | undefined {
  if (!isPlainObject(params)) return undefined;
  const value = params[name];
  return typeof value === "string" ? value : undefined;
}
