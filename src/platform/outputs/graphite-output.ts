/**
 * The `graphite` output (docs/outputs.md): Graphite's plaintext protocol over TCP
 * (https://graphite.readthedocs.io/en/latest/feeding-carbon.html), one line per event,
 * `<path> <metric> <unix seconds>\n`, over one persistent connection to carbon.
 *
 * The path is the `path` template (default `{host}.{service}`) with each `{field}` replaced by the
 * event's field, every character outside `A-Z a-z 0-9 _ - :` becoming `_` (a dot would add a level
 * to the tree, a space would end the path). An event without a numeric `metric`, or without one
 * of the template's fields, is skipped and counted `dropped-rejected`.
 *
 * Carbon answers nothing: a batch is sent once the connection took its bytes. A failed connect or
 * write is retried with the delivery model's backoff on a new connection; a batch written again
 * after a failure may repeat points, which carbon stores once (same path and time).
 */
import { createConnection, type Socket } from "node:net";
import * as v from "../validation.js";
import type { OutputDefinition } from "./config.js";
import { type AttemptResult, type Encoded, SENT, type Transport } from "./delivery.js";
import { type Event, metricOf, timeOf } from "./event.js";
import { scalarText } from "./summary.js";

/** Literal characters of a path template: those of a path, dots separating its levels. */
const TEMPLATE = /^(?:[A-Za-z0-9_.:-]|\{[^{}]{1,128}\})+$/;

/** A path template: literal text of `A-Z a-z 0-9 _ . - :` and `{field}` markers. */
export const graphitePath: v.Validator<string> = v.string({
  min: 1,
  max: 512,
  pattern: TEMPLATE,
  rule: "must be a path template: A-Z a-z 0-9 _ . - : and {field} markers",
});

/** The keys of a `graphite` output, besides the common ones. */
export const graphiteShape = {
  /** Carbon's host name or address. */
  host: v.required(
    v.string({ min: 1, max: 253, pattern: /^[A-Za-z0-9.:_-]+$/, rule: "must be a host name or an IP address" }),
  ),
  /** Carbon's plaintext port. */
  port: v.withDefault(v.integer(1, 65_535), 2003),
  /** The path template of each event's metric. */
  path: v.withDefault(graphitePath, "{host}.{service}"),
};

/** The definition of a `graphite` output. */
export type GraphiteOutputDefinition = Extract<OutputDefinition, { type: "graphite" }>;

/** A parsed template: literal parts at even positions, field names at odd ones. */
export type PathTemplate = readonly string[];

/** Splits a template (checked by {@link graphitePath}) into literal parts and field names. */
export function parsePathTemplate(template: string): PathTemplate {
  return template.split(/\{([^{}]+)\}/);
}

/** Characters that a path part may not hold. */
const NOT_IN_PART = /[^A-Za-z0-9_:-]/g;

/**
 * The path of an event, or `undefined` when a field of the template is missing, empty or not a
 * string, number or boolean.
 */
export function pathOf(event: Event, template: PathTemplate): string | undefined {
  let path = template[0] ?? "";
  for (let index = 1; index < template.length; index += 2) {
    const value = scalarText(event[template[index] ?? ""]);
    if (value === undefined || value === "") return undefined;
    path += value.replace(NOT_IN_PART, "_") + (template[index + 1] ?? "");
  }
  return path;
}

/** A batch as the lines of one write; events without a metric or a path are rejected. */
export function encodeGraphiteBatch(
  batch: readonly Event[],
  template: PathTemplate,
  nowSeconds: number,
): Encoded<string> {
  let lines = "";
  let points = 0;
  for (const event of batch) {
    const metric = metricOf(event);
    const seconds = Math.floor(timeOf(event) ?? nowSeconds);
    const path = metric === undefined ? undefined : pathOf(event, template);
    if (path === undefined || !Number.isSafeInteger(seconds) || seconds < 0) continue;
    lines += `${path} ${metric} ${seconds}\n`;
    points += 1;
  }
  const rejected = batch.length - points;
  if (points === 0) return { units: [], rejected };
  return { units: [{ payload: lines, events: points }], rejected };
}

/**
 * One TCP connection to carbon, opened on the first write and again after a failure (the delivery
 * model's backoff paces the attempts).
 */
export class GraphiteConnection {
  readonly #host: string;
  readonly #port: number;
  #socket: Socket | undefined;

  constructor(host: string, port: number) {
    this.#host = host;
    this.#port = port;
  }

  /**
   * Writes `lines`; resolves once the connection took them.
   * @throws the socket's error (refused, reset, closed), or an AbortError when `signal` aborts
   */
  async write(lines: string, signal: AbortSignal): Promise<AttemptResult> {
    const current = this.#socket;
    // A connection that carbon closed a moment ago may not have reported its close yet.
    const socket = current?.writable === true ? current : await this.#connect(signal);
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        // Part of the lines may be on the wire: the connection is not reused.
        socket.destroy();
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      socket.write(lines, (error) => {
        signal.removeEventListener("abort", onAbort);
        if (error === undefined || error === null) resolve();
        else reject(error);
      });
    });
    return SENT;
  }

  #connect(signal: AbortSignal): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const socket = createConnection({ host: this.#host, port: this.#port });
      const onAbort = (): void => {
        socket.destroy();
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      socket.once("error", (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      });
      socket.once("connect", () => {
        signal.removeEventListener("abort", onAbort);
        socket.removeAllListeners("error");
        socket.setKeepAlive(true);
        // Errors reach the write that meets them; this listener keeps them from being unhandled.
        socket.on("error", () => {});
        // Carbon sends nothing; whatever comes is read and discarded so that no buffer grows.
        socket.resume();
        // When carbon closes its side, the connection is done: the next write opens another one.
        socket.once("end", () => socket.destroy());
        socket.once("close", () => {
          if (this.#socket === socket) this.#socket = undefined;
        });
        this.#socket = socket;
        resolve(socket);
      });
    });
  }

  /** Closes the connection: at once with `force`, else once what was written has left. */
  async close(force: boolean): Promise<void> {
    const socket = this.#socket;
    this.#socket = undefined;
    if (socket === undefined) return;
    if (force) socket.destroy();
    else socket.end();
  }
}

/** The transport of a `graphite` output. */
export function graphiteTransport(definition: GraphiteOutputDefinition): Transport<string> {
  const template = parsePathTemplate(definition.path);
  const connection = new GraphiteConnection(definition.host, definition.port);
  return {
    encode: (batch) => encodeGraphiteBatch(batch, template, Date.now() / 1000),
    send: (payload, signal) => connection.write(payload, signal),
    close: (force) => connection.close(force),
  };
}
