/**
 * The browser files of the comments module as the server serves them: the
 * widget a static site embeds, and the moderation page's script and style. esbuild builds them from
 * src/comments/browser/ into `dist/comments/browser/` (scripts/build-browser.mjs: `widget.js`,
 * `admin.js`, and `admin.css` when admin.ts imports a style sheet); the server reads them once at
 * start-up and keeps them in memory with their entity tags and a gzip copy, so that a request costs
 * no file access, no hashing and no compression.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { constants, gzipSync } from "node:zlib";

/** Where the built files are: beside this module once compiled (`dist/comments/browser/`). */
export const COMMENTS_BROWSER_DIRECTORY = new URL("./browser/", import.meta.url);

/**
 * The most the widget may weigh gzip-compressed, CSS included, in bytes: 5 kB, read as 5 000 bytes,
 * the stricter of the two readings of kB.
 */
export const WIDGET_GZIP_BUDGET_BYTES = 5_000;

/** One encoding of an asset: its bytes and their strong entity tag. */
export interface Representation {
  readonly body: Buffer;
  /** A strong entity tag (RFC 9110 §8.8.3), quoted: the first 128 bits of the SHA-256 of `body`, base64url. */
  readonly etag: string;
}

/** A file served as is, whatever the request (but for its encoding). */
export interface StaticAsset {
  /** The `Content-Type` header. */
  readonly type: string;
  /** The bytes as built. */
  readonly identity: Representation;
  /**
   * The bytes gzip-compressed (RFC 9110 §8.4.1.3), for clients that accept it; `undefined` when
   * compression would not make them smaller (a tiny file). Each representation has its own tag, as
   * RFC 9110 §8.8.3 wants of a strong validator.
   */
  readonly gzip: Representation | undefined;
  /** Bytes of the gzip-compressed file (level 9), whether or not it is served: the size budget's measure. */
  readonly gzipBytes: number;
}

function representation(body: Buffer): Representation {
  return { body, etag: `"${createHash("sha256").update(body).digest().subarray(0, 16).toString("base64url")}"` };
}

/**
 * An asset of these bytes.
 * @param type the `Content-Type`, with its charset (`text/javascript; charset=utf-8`)
 */
export function staticAsset(content: Buffer | string, type: string): StaticAsset {
  const body = typeof content === "string" ? Buffer.from(content, "utf8") : content;
  const compressed = gzipSync(body, { level: constants.Z_BEST_COMPRESSION });
  return {
    type,
    identity: representation(body),
    gzip: compressed.length < body.length ? representation(compressed) : undefined,
    gzipBytes: compressed.length,
  };
}

/**
 * Whether a request with this `Accept-Encoding` header accepts gzip (RFC 9110 §12.5.3): `gzip` (or
 * its alias `x-gzip`) listed with a weight above 0, or else `*` with a weight above 0. No header:
 * false (the identity encoding is always acceptable).
 */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  let gzip: number | undefined;
  let any: number | undefined;
  for (const part of header.split(",")) {
    const [coding = "", ...parameters] = part.split(";").map((text) => text.trim().toLowerCase());
    let weight = 1;
    for (const parameter of parameters) {
      const match = /^q=([01](?:\.\d{0,3})?)$/.exec(parameter);
      if (match !== null) weight = Number(match[1]);
    }
    if (coding === "gzip" || coding === "x-gzip") gzip = weight;
    else if (coding === "*") any = weight;
  }
  return (gzip ?? any ?? 0) > 0;
}

/** The built browser files; each is `undefined` when it is not built. */
export interface CommentAssets {
  /** `widget.js`: the script a static site embeds. */
  readonly widget: StaticAsset | undefined;
  /** `admin.js`: the moderation page's script. */
  readonly adminScript: StaticAsset | undefined;
  /** `admin.css`: the moderation page's style (emitted by esbuild when admin.ts imports it). */
  readonly adminStyle: StaticAsset | undefined;
}

const JAVASCRIPT = "text/javascript; charset=utf-8";
const CSS = "text/css; charset=utf-8";

/**
 * Reads one built file.
 * @returns undefined when the file is missing (a build without the browser step, or the sources
 *   run directly)
 * @throws Error when the file exists but cannot be read
 */
async function loadFile(file: URL, type: string): Promise<StaticAsset | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "ENOENT") return undefined;
    throw error;
  }
  return staticAsset(bytes, type);
}

/**
 * Reads the built browser files of the comments module.
 * @param directory where they are, ending with `/`; default {@link COMMENTS_BROWSER_DIRECTORY}
 * @throws Error when a file exists but cannot be read
 */
export async function loadCommentAssets(directory: URL = COMMENTS_BROWSER_DIRECTORY): Promise<CommentAssets> {
  const [widget, adminScript, adminStyle] = await Promise.all([
    loadFile(new URL("widget.js", directory), JAVASCRIPT),
    loadFile(new URL("admin.js", directory), JAVASCRIPT),
    loadFile(new URL("admin.css", directory), CSS),
  ]);
  return { widget, adminScript, adminStyle };
}
