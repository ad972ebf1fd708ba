/**
 * The mirror's `.crate` files (docs/cargo.md, "Using the mirror for CI"): a file missing from the
 * cache is downloaded once from the URL cargo would use (the upstream's `config.json` `dl`, or
 * `upstream-download`), checked against the SHA-256 of the index's `cksum` as it streams to a
 * temporary file, and linked into the cache like a published file; a mismatch is refused and
 * nothing is kept. Concurrent requests for one missing file wait for that one download; every
 * later request streams the cached file.
 */
import { createHash } from "node:crypto";
import type { ReadStream } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { errnoCode, errorMessage, NotFoundError, UnavailableError } from "../../../platform/errors.js";
import { isPlainObject } from "../../../platform/validation.js";
import type { CrateFiles } from "../files.js";
import { canonicalCrateName } from "../names.js";
import { type DownloadTarget, expandDownloadUrl } from "./download-url.js";
import { findVersion } from "./index-lines.js";
import type { IndexMirror } from "./index-mirror.js";
import type { SingleFlight } from "./single-flight.js";
import { discard, readBounded, shownUrl, TooLongError, type Upstream, type UpstreamAnswer } from "./upstream.js";

/** The largest upstream `config.json` read, in bytes. */
const MAX_CONFIG = 64 * 1024;

/** What the crate mirror needs. */
export interface CrateMirrorOptions {
  readonly index: IndexMirror;
  /** The cache's `.crate` files (`<cache>/crates`). */
  readonly files: CrateFiles;
  readonly upstream: Upstream;
  /** The upstream sparse index, ending with `/`. */
  readonly upstreamIndex: URL;
  /** `upstream-download`: replaces the `dl` of the upstream's `config.json`. */
  readonly upstreamDownload: string | undefined;
  /** `max-age` of the upstream's `config.json`, in milliseconds. */
  readonly maxAgeMs: number;
  /** The largest `.crate` downloaded, in bytes. */
  readonly maxCrateBytes: number;
  readonly flights: SingleFlight<void>;
  /** Counts one upstream request of a kind. */
  readonly countRequest: (kind: "config" | "crate") => void;
  readonly warn: (details: Record<string, unknown>, message: string) => void;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

/** A download whose bytes are not those the index promised. */
export class ChecksumMismatchError extends Error {}

/** The `.crate` files of the upstream, through the cache. */
export class CrateMirror {
  #dl: { readonly value: string; readonly fetchedAt: number } | undefined;

  constructor(readonly options: CrateMirrorOptions) {}

  /**
   * A stream of a version's `.crate`, downloaded first when the cache lacks it.
   * @param name a valid crate name (as cargo asks for it, the index's spelling)
   * @param vers a valid version
   * @throws NotFoundError (no such crate or version upstream), UnavailableError (the upstream
   *   cannot answer, or its file does not match the index's checksum)
   */
  async open(name: string, vers: string): Promise<ReadStream> {
    const { files, flights } = this.options;
    const canonical = canonicalCrateName(name);
    const cached = await openIfPresent(files, canonical, vers);
    if (cached !== undefined) return cached;
    await flights.run(`crate/${canonical}/${vers}`, () => this.#download(name, vers));
    return files.open(canonical, vers);
  }

  /** Downloads a version into the cache. */
  async #download(name: string, vers: string): Promise<void> {
    const lower = name.toLowerCase();
    const { file } = await this.options.index.file(lower);
    const target = findVersion(file.body, lower, vers);
    if (target === undefined) throw new NotFoundError(`crate ${name} has no version ${vers} in the upstream index`);
    const url = expandDownloadUrl(await this.#downloadTemplate(), target);
    this.options.countRequest("crate");
    let answer: UpstreamAnswer;
    try {
      answer = await this.options.upstream.get(url);
    } catch (error) {
      throw this.#unavailable(target, url, errorMessage(error));
    }
    if (answer.status !== 200) {
      discard(answer);
      if (answer.status === 404) throw new NotFoundError(`the upstream has no file for ${name} ${vers}`);
      throw this.#unavailable(target, url, `the upstream answered ${answer.status}`);
    }
    try {
      await this.options.files.writeWith(canonicalCrateName(target.name), target.vers, (handle) =>
        copyChecked(answer, handle, target, this.options.maxCrateBytes),
      );
    } catch (error) {
      discard(answer);
      if (error instanceof ChecksumMismatchError || error instanceof TooLongError) {
        this.options.warn(
          { crate: target.name, version: vers, upstream: shownUrl(url) },
          `cargo mirror: ${error.message}`,
        );
        throw new UnavailableError(`${error.message}: refused, not cached`);
      }
      throw this.#unavailable(target, url, errorMessage(error));
    }
  }

  #unavailable(target: DownloadTarget, url: URL, reason: string): UnavailableError {
    this.options.warn(
      { crate: target.name, version: target.vers, upstream: shownUrl(url), reason },
      "cargo mirror: download failed",
    );
    return new UnavailableError(`cannot download ${target.name} ${target.vers} from the upstream (${reason})`);
  }

  /** The `dl` template: `upstream-download`, else the upstream's `config.json` (kept for max-age). */
  async #downloadTemplate(): Promise<string> {
    const { upstreamDownload, upstreamIndex, upstream, maxAgeMs, now } = this.options;
    if (upstreamDownload !== undefined) return upstreamDownload;
    const known = this.#dl;
    if (known !== undefined && now() - known.fetchedAt < maxAgeMs) return known.value;
    const url = new URL("config.json", upstreamIndex);
    try {
      this.options.countRequest("config");
      const answer = await upstream.get(url);
      if (answer.status !== 200) {
        discard(answer);
        throw new Error(`the upstream answered ${answer.status}`);
      }
      const value = dlOf(await readBounded(answer, MAX_CONFIG));
      this.#dl = { value, fetchedAt: now() };
      return value;
    } catch (error) {
      // The last known template still serves: a download host rarely moves.
      if (known !== undefined) return known.value;
      this.options.warn(
        { upstream: shownUrl(url), reason: errorMessage(error) },
        "cargo mirror: cannot read config.json",
      );
      throw new UnavailableError(`cannot read the upstream's config.json (${errorMessage(error)})`);
    }
  }
}

/** The `dl` of a `config.json`. @throws Error when it has none */
function dlOf(body: Buffer): string {
  const config: unknown = JSON.parse(body.toString("utf8"));
  const dl = isPlainObject(config) ? config.dl : undefined;
  if (typeof dl !== "string" || !/^https?:\/\//.test(dl)) throw new Error("its config.json has no http(s) dl");
  return dl;
}

/** A stream of a cached file, or undefined when it is not cached. */
async function openIfPresent(files: CrateFiles, canonical: string, vers: string): Promise<ReadStream | undefined> {
  try {
    return await files.open(canonical, vers);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Copies an upstream body into `handle`, hashing it as it comes.
 * @throws TooLongError past `maxBytes`, ChecksumMismatchError when the SHA-256 is not `target.cksum`
 */
async function copyChecked(
  answer: UpstreamAnswer,
  handle: FileHandle,
  target: DownloadTarget,
  maxBytes: number,
): Promise<void> {
  const declared = Number(answer.header("content-length") ?? "0");
  if (declared > maxBytes)
    throw new TooLongError(
      `the upstream's ${target.name} ${target.vers} is ${declared} bytes, more than the ${maxBytes} allowed`,
    );
  const hash = createHash("sha256");
  let length = 0;
  for await (const chunk of answer.body) {
    length += chunk.length;
    if (length > maxBytes)
      throw new TooLongError(`the upstream's ${target.name} ${target.vers} is more than the ${maxBytes} bytes allowed`);
    hash.update(chunk);
    await handle.write(chunk);
  }
  const actual = hash.digest("hex");
  if (actual !== target.cksum) {
    throw new ChecksumMismatchError(
      `the upstream's ${target.name} ${target.vers} does not match the index's checksum (sha256 ${actual}, expected ${target.cksum})`,
    );
  }
}
