/**
 * The client side of `vigie stream tap` and `vigie stream graph` (docs/streams.md): they talk to a
 * running server, at `--url` (else `$VIGIE_URL`, else http://127.0.0.1:8080), with `--token` (else
 * `$VIGIE_TOKEN`) when the server has `security.require-token`.
 */
import WebSocket from "ws";
import { errorMessage } from "../platform/errors.js";

/** Where the server is when neither `--url` nor `$VIGIE_URL` says. */
export const DEFAULT_URL = "http://127.0.0.1:8080";

/** The options both commands share. */
export interface RemoteOptions {
  readonly url?: string;
  readonly token?: string;
}

/** What a command ends with: the exit status and, for a failure, the message for standard error. */
export interface Outcome {
  readonly code: 0 | 1 | 2;
  readonly message?: string;
}

/**
 * The server's base URL, checked.
 * @throws Error naming `--url` when it is not an http:// or https:// URL
 */
export function baseUrlOf(options: RemoteOptions): URL {
  const text = options.url ?? process.env.VIGIE_URL ?? DEFAULT_URL;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`--url: must be an http:// or https:// URL (got ${JSON.stringify(text)})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`--url: must be an http:// or https:// URL (got ${JSON.stringify(text)})`);
  }
  return url;
}

/** The URL of an API path under the base URL (which may itself have a path, behind a proxy). */
function apiUrl(base: URL, path: string): URL {
  const url = new URL(base);
  url.pathname = `${base.pathname.replace(/\/+$/, "")}${path}`;
  url.search = "";
  return url;
}

function authorization(options: RemoteOptions): Record<string, string> {
  const token = options.token ?? process.env.VIGIE_TOKEN;
  return token === undefined || token === "" ? {} : { authorization: `Bearer ${token}` };
}

/** The sentence of an error answer (`{"error": "..."}`), else its status line. */
function errorOf(status: number, body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === "object" && parsed !== null && "error" in parsed && typeof parsed.error === "string") {
      return `${status}: ${parsed.error}`;
    }
  } catch {
    // Not JSON: the status says enough.
  }
  return `the server answered ${status}`;
}

/** The options of `vigie stream tap`. */
export interface TapOptions extends RemoteOptions {
  /** A where-condition as EDN text; only matching events are printed. */
  readonly where?: string;
  /** A `:tap-point` of the stream; without it, the events entering the stream. */
  readonly point?: string;
}

/**
 * Prints each event the tap receives as one JSON line on `out` until the server closes the
 * connection, `stop` resolves (Ctrl-C), or the connection fails. While `out` cannot take more, the
 * socket stops reading, so that the server (which drops and counts what a slow watcher cannot take)
 * bears the backlog, never this process.
 * @returns 0 once stopped or closed normally, 1 when the server refused or lost the connection
 */
export function tap(
  name: string,
  options: TapOptions,
  out: NodeJS.WritableStream,
  stop: Promise<void>,
): Promise<Outcome> {
  const url = apiUrl(baseUrlOf(options), `/api/v1/stream/${encodeURIComponent(name)}/tap`);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  if (options.point !== undefined) url.searchParams.set("point", options.point);
  if (options.where !== undefined) url.searchParams.set("query", Buffer.from(options.where, "utf8").toString("base64"));
  const socket = new WebSocket(url, { headers: authorization(options), perMessageDeflate: false });
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    socket.on("message", (data: Buffer) => {
      if (!out.write(`${data.toString("utf8")}\n`)) {
        socket.pause();
        out.once("drain", () => socket.resume());
      }
    });
    socket.on("unexpected-response", (_request, response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        settle({ code: 1, message: errorOf(response.statusCode ?? 0, Buffer.concat(chunks).toString("utf8")) });
      });
    });
    socket.on("error", (error) => settle({ code: 1, message: error.message }));
    socket.on("close", (code, reason) => {
      const why = reason.toString("utf8");
      if (code === 1000 || code === 1005) settle({ code: 0 });
      else settle({ code: 1, message: `the server closed the tap (${code}${why === "" ? "" : `: ${why}`})` });
    });
    stop.then(() => {
      settle({ code: 0 });
      socket.close(1000);
    });
  });
}

/**
 * Fetches a stream's graph: the SVG drawing, or the JSON with `json`.
 * @returns the document, or the failure
 */
export async function fetchGraph(
  name: string,
  options: RemoteOptions & { readonly json?: boolean },
): Promise<{ readonly body: string } | Outcome> {
  const url = apiUrl(baseUrlOf(options), `/api/v1/stream/${encodeURIComponent(name)}/graph`);
  const accept = options.json ? "application/json" : "image/svg+xml";
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept, ...authorization(options) } });
  } catch (error) {
    return { code: 1, message: `${url.origin}: ${errorMessage(error)}` };
  }
  const body = await response.text();
  if (!response.ok) return { code: 1, message: errorOf(response.status, body) };
  return { body };
}
