/**
 * The streams HTTP API (docs/streams.md, API): stream configurations and index searches (pushes: push.ts).
 *
 * Streams that a stream directory file defines belong to the operator: POST and DELETE of their
 * names answer 409 naming the file, and the API never writes, replaces or removes such a file.
 * Streams created with `:persist true` are written to the API streams directory, one file each
 * (`<first stream directory>/.vigie-api/<name>.edn`), or stored in the database in cluster mode.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from "fastify";
import { ConflictError, INVALID_JSON, InvalidError, TooLargeError } from "../../platform/errors.js";
import type { RouteDescription } from "../../platform/openapi.js";
import { queryOf } from "../../platform/query.js";
import type { StreamLimits } from "../action.js";
import { EncodedAnswer } from "../cluster.js";
import { CompileError } from "../compile-error.js";
import type { CompiledConfig } from "../compiler.js";
import type { Predicate } from "../condition.js";
import { type EdnValue, isMap, mapSet, toEdn } from "../edn.js";
import type { Stream, StreamEngine } from "../engine.js";
import type { Event } from "../event.js";
import { DEFAULT_STREAM, isStreamName, STREAM_NAME_RULE } from "../names.js";
import {
  type AnswerBounds,
  type BoundsWording,
  jsonAnswer,
  QueryBoundError,
  searchIndexes,
  searchParts,
} from "../query-answer.js";
import { compileQuery as compileRiemannQuery } from "../riemann/query.js";
import { removeStreamFile, writeStreamFile } from "../storage.js";
import { type NamedRoute, streamNotFound } from "./request.js";
import * as api from "./streams-api.js";
import { compileWhereQuery, parseRequestEdn, searchBody, streamBody, whereQueryParameter } from "./where-query.js";

/** What the routes need besides the engine. */
export interface StreamRoutesOptions {
  readonly engine: StreamEngine;
  /**
   * The API streams directory (`<first stream directory>/.vigie-api`, where `:persist true` writes),
   * or `undefined` without stream directories. Unused in cluster mode (the database holds them).
   */
  readonly persistDirectory: string | undefined;
  /** A guard for every route when `security.require-token` is true. */
  readonly guard: preHandlerHookHandler | undefined;
  /** Cluster mode (docs/cluster.md): shared API streams, and queries answered by owners. */
  readonly cluster?: StreamRoutesCluster;
}

/** What the routes do differently in cluster mode. */
export interface StreamRoutesCluster {
  /** Stores a stream created through the API, runs `apply`, then tells the other instances. */
  save(name: string, config: EdnValue, apply: () => void): Promise<void>;
  /** Deletes a stored stream, runs `apply`, then tells the other instances. */
  remove(name: string, apply: () => void): Promise<void>;
  /** Whether this instance owns the stream (and answers its queries itself). */
  owns(name: string): boolean;
  /**
   * Asks the owner; a large answer comes in parts, received within `bounds`.
   * @throws UnavailableError when the owner does not answer within 2 s (or a part of its answer);
   *   QueryBoundError when the answer exceeds `bounds`
   */
  ask(
    name: string,
    query: { kind: "search"; query: unknown } | { kind: "current-time" },
    bounds?: BoundsWording,
  ): Promise<unknown>;
}

/**
 * Refuses to change a stream that a stream directory file defines: that file is the operator's,
 * and the API never writes to it (nor would a change of the running stream outlast a reload).
 * @throws ConflictError naming the file
 */
function refuseOperatorStream(stream: Stream | undefined, change: "replace" | "delete"): void {
  if (stream?.origin.kind !== "file") return;
  throw new ConflictError(
    `stream ${stream.name} is defined in the configuration file ${stream.origin.file}: ${change} it there and reload (SIGHUP)`,
  );
}

/** Reads a GET request's body (Fastify does not parse bodies of GET requests). */
async function rawBody(request: FastifyRequest, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request.raw) {
    // Bytes: nothing set an encoding on the request stream.
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += bytes.length;
    if (size > limit) throw new TooLargeError(`request body is larger than the limit of ${limit} bytes`);
    chunks.push(bytes);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The query of a search request as sent (EDN text, or base64 of it), not compiled yet. */
async function searchQueryValue(request: FastifyRequest, bodyLimit: number): Promise<unknown> {
  let query: unknown = whereQueryParameter(queryOf(request.query));
  if (query === undefined) {
    let body = request.body;
    if (request.method === "GET") {
      const text = await rawBody(request, bodyLimit);
      if (text.trim() !== "") {
        try {
          body = JSON.parse(text);
        } catch {
          throw new InvalidError(INVALID_JSON);
        }
      }
    }
    query = searchBody(body, "").query;
  }
  if (query === undefined) throw new InvalidError("field query: is required (in the body or as ?query=)");
  return query;
}

/** The events of an owner's answer (an array of events when it answered a search). */
function eventsOf(answer: unknown): Event[] {
  return Array.isArray(answer) ? answer : [];
}

/** The bounds of an index search's answer (HTTP). */
export function searchBounds(limits: StreamLimits): AnswerBounds {
  return {
    results: limits.queryResults,
    bytes: limits.queryBytes,
    resultsSetting: "streams.max-query-results",
    regexAllowance: limits.event.size,
    what: "index search",
  };
}

/** Runs `answer`, turning an answer beyond a bound into a 400 naming the bound. */
async function bounded<T>(answer: () => Promise<T>): Promise<T> {
  try {
    return await answer();
  } catch (error) {
    if (error instanceof QueryBoundError) throw new InvalidError(error.message);
    throw error;
  }
}

/**
 * What a stream's owner answers to another instance's query (cluster mode): the current time, or
 * the events of an index search (a where-condition, or a Riemann query of that instance's Riemann
 * input, with that input's `limit` of events), held to the same bounds as on one instance: the
 * events' answer is serialised a slice per turn, and measured against `max-query-bytes`, here.
 * @returns the current time (seconds), or the search's answer `{"value": [events]}`
 *   serialised (an EncodedAnswer, sent as it is)
 * @param partition the partition asked about, for a partitioned stream (its owner answers for it alone)
 * @throws InvalidError for an invalid query, or an answer beyond a bound (naming it)
 */
export function answerQuery(
  stream: Stream,
  query: { kind: string; query?: unknown; limit?: unknown },
  limits: StreamLimits,
  partition?: number,
): Promise<unknown> {
  const index = stream.parts[partition ?? 0]?.index ?? stream.index;
  if (query.kind === "current-time") return Promise.resolve(index.currentTime);
  let bounds = searchBounds(limits);
  let predicate: Predicate;
  if (query.kind === "riemann-search") {
    if (typeof query.query !== "string") throw new InvalidError("a Riemann query must be text");
    const limit = typeof query.limit === "number" && query.limit >= 1 ? query.limit : bounds.results;
    predicate = compileRiemannQuery(query.query);
    bounds = { ...bounds, results: limit, what: "query" };
  } else {
    predicate = compileWhereQuery(query.query);
  }
  return bounded(async () => {
    const found = await searchIndexes([index], predicate, bounds);
    return new EncodedAnswer(await jsonAnswer(found, bounds, "value"));
  });
}

/**
 * Compiles the configuration of `POST /api/v1/stream/<name>`.
 * @throws InvalidError for an invalid name or configuration; ConflictError for an operator's stream
 */
function postedConfig(
  engine: StreamEngine,
  name: string,
  body: unknown,
): { config: EdnValue; compiled: CompiledConfig } {
  if (!isStreamName(name)) throw new InvalidError(`stream name ${STREAM_NAME_RULE}`);
  if (name === DEFAULT_STREAM)
    throw new InvalidError('stream name "default" is reserved for pushes to the default streams');
  const config = parseRequestEdn(streamBody(body, "").config, "invalid stream config");
  if (!isMap(config)) throw new InvalidError("invalid stream config: the configuration must be an EDN map");
  refuseOperatorStream(engine.get(name), "replace");
  try {
    return { config, compiled: engine.compile(config) };
  } catch (error) {
    if (error instanceof CompileError) throw new InvalidError(error.message);
    throw error;
  }
}

/**
 * Adds or replaces a stream created through the API. Nothing changes until the configuration
 * compiled and, when persisted, its file is written: a refused or failed POST leaves the running
 * stream (and its file) as they were.
 */
async function addStream(options: StreamRoutesOptions, name: string, body: unknown): Promise<void> {
  const { engine, persistDirectory, cluster } = options;
  const { config, compiled } = postedConfig(engine, name, body);
  const add = () => engine.add(name, config, { kind: "api" }, compiled);
  if (cluster !== undefined) {
    // Cluster mode: every API stream is stored in the database, :persist or not.
    await cluster.save(name, config, add);
  } else if (compiled.persist) {
    if (persistDirectory === undefined) {
      throw new InvalidError("invalid stream config: :persist needs streams.directories to be configured");
    }
    await writeStreamFile(persistDirectory, name, config);
    add();
  } else {
    // A stream replaced by one that is not persisted must not come back at the next start; the
    // file goes first, so that a failure to remove it changes nothing.
    if (persistDirectory !== undefined) await removeStreamFile(persistDirectory, name);
    add();
  }
}

/** Removes a stream created through the API (and its file, or its stored definition). */
async function removeStream(options: StreamRoutesOptions, stream: Stream): Promise<void> {
  const { engine, persistDirectory, cluster } = options;
  refuseOperatorStream(stream, "delete");
  if (cluster !== undefined) {
    await cluster.remove(stream.name, () => engine.remove(stream.name));
    return;
  }
  // The file first: a reload in between would otherwise start the stream again from it.
  if (persistDirectory !== undefined) await removeStreamFile(persistDirectory, stream.name);
  engine.remove(stream.name);
}

/** Registers the streams routes. */
export async function streamRoutes(app: FastifyInstance, options: StreamRoutesOptions): Promise<void> {
  const { engine, guard, cluster } = options;
  const routeOptions = guard === undefined ? {} : { preHandler: guard };

  const streamOf = (name: string) => {
    const stream = engine.get(name);
    if (stream === undefined) throw streamNotFound(name);
    return stream;
  };

  const described = (openapi: RouteDescription) => ({ ...routeOptions, config: { openapi } });

  app.post<NamedRoute>("/api/v1/stream/:name", described(api.createStream), async (request, reply) => {
    await addStream(options, request.params.name, request.body);
    reply.code(201);
    return { message: "stream added" };
  });

  app.get("/api/v1/stream", described(api.listStreams), async () => ({ streams: engine.names() }));

  app.get<NamedRoute>("/api/v1/stream/:name", described(api.readStream), async (request) => {
    const stream = streamOf(request.params.name);
    const config = isMap(stream.config) ? mapSet(stream.config, "default", stream.isDefault) : stream.config;
    return {
      config: Buffer.from(toEdn(config), "utf8").toString("base64"),
      "current-time": stream.currentTime,
    };
  });

  app.delete<NamedRoute>("/api/v1/stream/:name", described(api.deleteStream), async (request) => {
    await removeStream(options, streamOf(request.params.name));
    return { message: "stream removed" };
  });

  // The answer is serialised here, a slice per turn of the event loop, within max-query-bytes.
  const search = async (request: FastifyRequest<NamedRoute>, reply: FastifyReply) => {
    const stream = streamOf(request.params.name);
    const query = await searchQueryValue(request, app.initialConfig.bodyLimit ?? 1024 * 1024);
    const bounds = searchBounds(engine.limits);
    const predicate = compileWhereQuery(query); // an invalid query is a 400 here, without asking an owner
    // Cluster mode: each part (the stream, or each partition) is searched by its owner.
    const found = await bounded(() =>
      searchParts(
        stream.parts,
        (key) => cluster === undefined || cluster.owns(key),
        predicate,
        bounds,
        async (key) => eventsOf(await cluster?.ask(key, { kind: "search", query }, bounds)),
      ),
    );
    const body = await bounded(() => jsonAnswer(found, bounds));
    return reply.type("application/json; charset=utf-8").send(body);
  };
  app.get<NamedRoute>("/api/v1/index/:name/search", described(api.searchIndexGet), search);
  app.post<NamedRoute>("/api/v1/index/:name/search", described(api.searchIndexPost), search);

  app.get<NamedRoute>("/api/v1/index/:name/current-time", described(api.indexCurrentTime), async (request) => {
    const stream = streamOf(request.params.name);
    if (cluster === undefined) return { "current-time": stream.currentTime };
    // Cluster mode: the largest of the parts' clocks, each from its owner.
    const times = await Promise.all(
      stream.parts.map((part) =>
        cluster.owns(part.key) ? part.index.currentTime : cluster.ask(part.key, { kind: "current-time" }),
      ),
    );
    let time = 0;
    for (const value of times) if (typeof value === "number" && value > time) time = value;
    return { "current-time": time };
  });
}
