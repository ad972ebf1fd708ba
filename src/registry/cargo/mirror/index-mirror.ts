/**
 * The mirror's copies of upstream index files (docs/cargo.md, "Using the mirror for CI"): fetched
 * on first request, kept on disk under `<cache>/index/<index path>` and in memory (bounded by
 * bytes), asked of the upstream again with a conditional request once `max-age` has passed, and
 * served stale when the upstream cannot answer. Concurrent requests for one file make one upstream
 * request. Paths come from crate names checked by `nameFromIndexPath`, never from request text.
 * A crate the upstream does not have is remembered as missing for `max-age` too (in memory, at
 * most {@link MAX_MISSING} names), as a CDN caches a 404: cargo asks for the index file of every
 * name it resolves, and a build that names a missing crate should not reach the upstream each time.
 *
 * A file on disk is one JSON header line (the upstream's validators and the time it confirmed the
 * bytes) followed by the upstream's bytes, replaced atomically (temporary file, rename).
 */
import { createHash, randomBytes } from "node:crypto";
import { open, readFile, rename, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { errnoCode, errorMessage, NotFoundError, UnavailableError } from "../../../platform/errors.js";
import { makePrivateDirectory, PRIVATE_FILE_MODE } from "../../../platform/private-files.js";
import type { IndexCache, RenderedIndex } from "../index-cache.js";
import { indexPath } from "../names.js";
import { conditionalHeaders, isStale, RETRY_AFTER_FAILURE_MS, type Validators, verdictOf } from "./freshness.js";
import { checkIndexFile } from "./index-lines.js";
import type { SingleFlight } from "./single-flight.js";
import { discard, readBounded, shownUrl, type Upstream } from "./upstream.js";

const gzipped = promisify(gzip);

/** The largest upstream index file kept, in bytes (crates.io's largest are a few MiB). */
export const MAX_INDEX_FILE = 32 * 1024 * 1024;

/** The most crate names remembered as missing upstream; the oldest is forgotten first. */
export const MAX_MISSING = 10_000;

/** A mirrored index file: what is served (our ETag, the bytes, their gzip) and the upstream's validators. */
export interface MirroredIndex extends RenderedIndex, Validators {
  /** `Last-Modified` served to clients, in milliseconds since the epoch. */
  readonly modifiedAt: number;
  /** After a failed revalidation: the upstream is not asked again before this time (ms). */
  readonly retryAt?: number;
}

/** An index file and whether it is served stale (its revalidation failed). */
export interface IndexAnswer {
  readonly file: MirroredIndex;
  readonly stale: boolean;
}

/** What the index mirror needs. */
export interface IndexMirrorOptions {
  /** The upstream sparse index, ending with `/`. */
  readonly upstreamIndex: URL;
  /** `<cache>/index`. */
  readonly directory: string;
  /** `max-age`, in milliseconds. */
  readonly maxAgeMs: number;
  readonly upstream: Upstream;
  readonly memory: IndexCache<string, MirroredIndex>;
  readonly flights: SingleFlight<IndexAnswer>;
  /** Counts one upstream request. */
  readonly countRequest: () => void;
  /** Logs a failed revalidation (once per attempt, not per client). */
  readonly warn: (details: Record<string, unknown>, message: string) => void;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

/** The upstream index files, through a cache on disk and in memory. */
export class IndexMirror {
  /** Names the upstream answered 404 or 410 for, with the time (ms) until which that answer holds. */
  readonly #missing = new Map<string, number>();

  constructor(readonly options: IndexMirrorOptions) {}

  /**
   * The index file of a crate, by its lower-cased name as `nameFromIndexPath` returned it.
   * @throws NotFoundError (the upstream has no such crate), UnavailableError (the upstream cannot
   *   answer and nothing is cached)
   */
  async file(name: string): Promise<IndexAnswer> {
    const { memory, flights, maxAgeMs, now } = this.options;
    const missingUntil = this.#missing.get(name);
    if (missingUntil !== undefined) {
      if (now() < missingUntil) throw notInUpstream(name);
      this.#missing.delete(name);
    }
    const copy = memory.get(name) ?? (await this.#load(name));
    const time = now();
    if (copy !== undefined && !isStale(copy, time, maxAgeMs)) return { file: copy, stale: false };
    if (copy?.retryAt !== undefined && time < copy.retryAt) return { file: copy, stale: true };
    return flights.run(`index/${name}`, () => this.#revalidate(name, copy));
  }

  /** The path of a crate's file on disk. */
  #path(name: string): string {
    return join(this.options.directory, indexPath(name));
  }

  async #revalidate(name: string, copy: MirroredIndex | undefined): Promise<IndexAnswer> {
    const { upstream, upstreamIndex, memory, now } = this.options;
    const url = new URL(indexPath(name), upstreamIndex);
    this.options.countRequest();
    let answer: Awaited<ReturnType<Upstream["get"]>>;
    try {
      answer = await upstream.get(url, conditionalHeaders(copy));
    } catch (error) {
      return this.#failed(name, copy, url, errorMessage(error));
    }
    switch (verdictOf(answer.status, copy !== undefined)) {
      case "replace": {
        let body: Buffer;
        try {
          body = await readBounded(answer, MAX_INDEX_FILE);
          checkIndexFile(body, name);
        } catch (error) {
          return this.#failed(name, copy, url, errorMessage(error));
        }
        const file = await render(body, {
          upstreamEtag: answer.header("etag"),
          upstreamLastModified: answer.header("last-modified"),
          fetchedAt: now(),
        });
        await this.#keep(name, file);
        return { file, stale: false };
      }
      case "confirm": {
        discard(answer);
        // verdictOf confirms only a request made with a copy.
        if (copy === undefined) return this.#failed(name, copy, url, "the upstream answered 304 to a plain request");
        const { retryAt: _, ...rest } = copy;
        const file: MirroredIndex = {
          ...rest,
          upstreamEtag: answer.header("etag") ?? copy.upstreamEtag,
          upstreamLastModified: answer.header("last-modified") ?? copy.upstreamLastModified,
          fetchedAt: now(),
        };
        await this.#keep(name, file);
        return { file, stale: false };
      }
      case "gone":
        discard(answer);
        memory.delete(name);
        await rm(this.#path(name), { force: true });
        this.#rememberMissing(name);
        throw notInUpstream(name);
      case "failed":
        discard(answer);
        return this.#failed(name, copy, url, `the upstream answered ${answer.status}`);
    }
  }

  /** Answers 404 for `name` without asking the upstream until `max-age` has passed. */
  #rememberMissing(name: string): void {
    if (this.#missing.size >= MAX_MISSING) {
      const oldest = this.#missing.keys().next().value;
      if (oldest !== undefined) this.#missing.delete(oldest);
    }
    this.#missing.set(name, this.options.now() + this.options.maxAgeMs);
  }

  /** After a failed upstream request: the copy, stale, for a while; else 503. */
  #failed(name: string, copy: MirroredIndex | undefined, url: URL, reason: string): IndexAnswer {
    this.options.warn(
      { crate: name, upstream: shownUrl(url), reason },
      "cargo mirror: cannot revalidate an index file",
    );
    if (copy === undefined) {
      throw new UnavailableError(
        `the upstream index cannot give the file of crate ${name} (${reason}), and it is not cached`,
      );
    }
    const file: MirroredIndex = { ...copy, retryAt: this.options.now() + RETRY_AFTER_FAILURE_MS };
    this.options.memory.set(name, file);
    return { file, stale: true };
  }

  /** Keeps a file in memory and on disk; a disk failure is logged, the file still served. */
  async #keep(name: string, file: MirroredIndex): Promise<void> {
    this.options.memory.set(name, file);
    try {
      await writeAtomically(this.#path(name), Buffer.concat([Buffer.from(`${headerOf(file)}\n`), file.body]));
    } catch (error) {
      this.options.warn({ crate: name, err: error }, "cargo mirror: cannot write an index file to the cache");
    }
  }

  /** The copy on disk, put in memory; undefined when there is none or it cannot be read. */
  async #load(name: string): Promise<MirroredIndex | undefined> {
    let bytes: Buffer;
    try {
      bytes = await readFile(this.#path(name));
    } catch (error) {
      if (errnoCode(error) !== "ENOENT")
        this.options.warn({ crate: name, err: error }, "cargo mirror: cannot read a cached index file");
      return undefined;
    }
    const newline = bytes.indexOf(0x0a);
    const validators = newline < 0 ? undefined : parseHeader(bytes.subarray(0, newline).toString("utf8"));
    if (validators === undefined) return undefined;
    const file = await render(bytes.subarray(newline + 1), validators);
    this.options.memory.set(name, file);
    return file;
  }
}

function notInUpstream(name: string): NotFoundError {
  return new NotFoundError(`crate ${name} not found in the upstream index`);
}

/** A file ready to serve: our ETag (a digest of the bytes), its gzip and its Last-Modified. */
async function render(body: Buffer, validators: Validators): Promise<MirroredIndex> {
  const { upstreamEtag, upstreamLastModified, fetchedAt } = validators;
  const upstreamTime = upstreamLastModified === undefined ? Number.NaN : Date.parse(upstreamLastModified);
  return {
    etag: createHash("sha256").update(body).digest("hex").slice(0, 32),
    body,
    gzip: await gzipped(body),
    upstreamEtag,
    upstreamLastModified,
    fetchedAt,
    modifiedAt: Number.isNaN(upstreamTime) ? fetchedAt : upstreamTime,
  };
}

/** The header line of a file on disk. */
function headerOf(file: MirroredIndex): string {
  return JSON.stringify({
    etag: file.upstreamEtag,
    "last-modified": file.upstreamLastModified,
    "fetched-at": file.fetchedAt,
  });
}

/** The validators of a header line; undefined when it is not one (the file is then fetched again). */
function parseHeader(line: string): Validators | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { etag, "last-modified": lastModified, "fetched-at": fetchedAt } = value as Record<string, unknown>;
  if (typeof fetchedAt !== "number" || !Number.isFinite(fetchedAt)) return undefined;
  return {
    upstreamEtag: typeof etag === "string" ? etag : undefined,
    upstreamLastModified: typeof lastModified === "string" ? lastModified : undefined,
    fetchedAt,
  };
}

/**
 * Replaces a file atomically: a temporary file beside it, then a rename, so that a reader sees
 * the old bytes or the new ones, never a part. A cache: no fsync, a crash costs one fetch again.
 */
async function writeAtomically(path: string, bytes: Buffer): Promise<void> {
  await makePrivateDirectory(dirname(path));
  const temporary = `${path}.tmp-${randomBytes(8).toString("hex")}`;
  try {
    const file = await open(temporary, "wx", PRIVATE_FILE_MODE);
    try {
      await file.writeFile(bytes);
    } finally {
      await file.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
