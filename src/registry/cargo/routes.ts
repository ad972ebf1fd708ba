/**
 * The Cargo registry's routes (cargo.md §1–5):
 *
 * - the sparse index under `/api/v1/cargo/index/` (config.json and one file per crate, with ETag
 *   and Last-Modified revalidation);
 * - Cargo's web API under `/api/v1/crates` (publish, yank, unyank, owners, search, download) and
 *   `GET /me`, answering errors in Cargo's format `{"errors": [{"detail": "<sentence>"}]}`, which
 *   cargo prints to its user;
 * - browsing under `/api/v1/registry/crates`, in Vigie's error format.
 *
 * Routes under `/api/v1/crates` take any body as bytes, with or without `Content-Type` (cargo
 * sends none with a publish, and `application/json` with an empty body to yank).
 */

import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { FastifyError, FastifyInstance, FastifyRequest } from "fastify";
import semver from "semver";
import { type Auth, type Principal, readToken } from "../../platform/auth.js";
import { HttpError } from "../../platform/errors.js";
import { escapeHtml } from "../../platform/html.js";
import { isPlainObject, ValidationError } from "../../platform/validation.js";
import type { UserStore } from "../storage.js";
import type { CargoSettings } from "./config.js";
import { checkCrateFile } from "./crate-file.js";
import type { CrateFiles } from "./files.js";
import type { IndexCache } from "./index-cache.js";
import type { CargoMetrics } from "./metrics.js";
import { publishOutcome } from "./metrics.js";
import { canonicalCrateName, crateName, nameFromIndexPath } from "./names.js";
import { indexLine, parsePublishFrame, publishMetadata, publishVersion, sha256Hex, versionKey } from "./publish.js";
import { type CargoScope, missingScope } from "./scopes.js";
import type { CargoStore, StoredCrate } from "./storage.js";

/** What the Cargo routes need. */
export interface CargoRoutesOptions {
  readonly settings: CargoSettings;
  /** `http.public-url`, without a trailing slash. */
  readonly publicUrl: string;
  readonly store: CargoStore;
  readonly files: CrateFiles;
  /** Rendered index files, bounded by `index-cache-size`. */
  readonly indexCache: IndexCache;
  readonly users: UserStore;
  readonly auth: Auth;
  readonly metrics: CargoMetrics;
  /** Counts a download of a version (flushed to the database in batches). */
  readonly countDownload: (versionId: number) => void;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

/** Bytes a publish may carry besides the `.crate`: the metadata JSON and the two lengths. */
const METADATA_ALLOWANCE = 1024 * 1024 + 8;

/** Bytes of every other body under `/api/v1/crates` (an owners list). */
const SMALL_BODY = 64 * 1024;

const gzipped = promisify(gzip);

/** Versions remembered for downloads; the memory starts over when full (a bound). */
const DOWNLOAD_CACHE_MAX = 10_000;

/** What a download needs of a version. */
interface DownloadTarget {
  readonly id: number;
  readonly name: string;
  readonly canonical: string;
  readonly vers: string;
  /** Bytes. */
  readonly size: number;
}

/** The highest version of a list by SemVer precedence, or `undefined` for an empty list. */
function highest(versions: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const version of versions) if (best === undefined || semver.gt(version, best)) best = version;
  return best;
}

/** Whether a path segment is a version as published (strict SemVer, build metadata allowed). */
function isVersion(text: string): boolean {
  try {
    publishVersion(text);
    return true;
  } catch {
    return false;
  }
}

/** Cargo's error body. */
function cargoError(detail: string): { errors: { detail: string }[] } {
  return { errors: [{ detail }] };
}

function crateNotFound(name: string): HttpError {
  return new HttpError(404, `crate ${name} not found`);
}

/** Registers every route of the Cargo registry. */
export function registerCargoRoutes(app: FastifyInstance, options: CargoRoutesOptions): void {
  const { settings, publicUrl, store, files, indexCache: index, users, auth, metrics, countDownload, now } = options;
  const authRequired = settings["auth-required"];
  const loginUrl = `${publicUrl}/me`;
  const challenge = { "www-authenticate": `Cargo login_url="${loginUrl}"` };

  /**
   * The principal of a request's token, or `undefined` without one when `required` is false.
   * @throws HttpError 401 (missing, invalid or expired token; with Cargo's WWW-Authenticate) or 403
   */
  const authenticate = async (request: FastifyRequest, required: boolean): Promise<Principal | undefined> => {
    const token = readToken(request.headers.authorization);
    if (token === undefined) {
      if (!required) return undefined;
      throw new HttpError(
        401,
        `this registry needs a token: create one (see ${loginUrl}) and run cargo login --registry <name>`,
        challenge,
      );
    }
    // A token limited by scopes is for these routes: each checks its scope with missingScope.
    const result = await auth.check(token, "tech", { scoped: true });
    switch (result.outcome) {
      case "ok":
        return result.principal;
      case "expired":
        throw new HttpError(401, `token expired: create another one (see ${loginUrl})`, challenge);
      case "inactive":
        throw new HttpError(403, "the token's user is not active");
      case "forbidden":
        throw new HttpError(403, "this token may not use the Cargo registry");
      default:
        throw new HttpError(401, `invalid token: create one (see ${loginUrl}) and run cargo login`, challenge);
    }
  };
  const requireUser = async (request: FastifyRequest): Promise<Principal> => {
    const principal = await authenticate(request, true);
    if (principal === undefined) throw new HttpError(401, "missing token", challenge);
    return principal;
  };

  /** The crate of a path segment, whatever its case and `-`/`_`. @throws HttpError 404 */
  const findCrate = async (name: string): Promise<StoredCrate> => {
    let valid: string;
    try {
      valid = crateName(name);
    } catch {
      throw crateNotFound(name);
    }
    const crate = await store.findCrate(canonicalCrateName(valid));
    if (crate === undefined) throw crateNotFound(name);
    return crate;
  };

  /**
   * Lets an owner of the crate or an admin through, with the token's `scope` for the crate.
   * @throws HttpError 403 naming what is missing
   */
  const requireOwner = async (principal: Principal, crate: StoredCrate, scope: CargoScope): Promise<void> => {
    const missing = missingScope(principal, scope, crate.name);
    if (missing !== undefined) throw new HttpError(403, missing);
    if (principal.role === "admin" || (await store.isOwner(crate.id, principal.id))) return;
    throw new HttpError(403, `you are not an owner of crate ${crate.name}`);
  };

  /**
   * A version to download, by the path's crate name and version. A published version never
   * changes (yanked ones are still downloaded, as Cargo expects), so lookups are remembered: a
   * download is then no database query. The memory starts over when full (a bound).
   * @throws HttpError 404
   */
  const downloads = new Map<string, DownloadTarget>();
  const downloadable = async (name: string, requested: string): Promise<DownloadTarget> => {
    const key = `${name}/${requested}`;
    const known = downloads.get(key);
    if (known !== undefined) return known;
    const crate = await findCrate(name);
    const version = isVersion(requested) ? await store.findVersion(crate.id, versionKey(requested)) : undefined;
    if (version === undefined || version.vers !== requested) {
      throw new HttpError(404, `crate ${crate.name} has no version ${requested}`);
    }
    const target = {
      id: version.id,
      name: crate.name,
      canonical: crate.canonical,
      vers: version.vers,
      size: version.size,
    };
    if (downloads.size >= DOWNLOAD_CACHE_MAX) downloads.clear();
    downloads.set(key, target);
    return target;
  };

  // ---- The sparse index (cargo.md §1), Vigie's error format.
  // Bodies kept as bytes (a 1 000-version file is ~170 kB), converted once, not per request, in `index`.
  app.get("/api/v1/cargo/index/config.json", async (request, reply) => {
    await authenticate(request, authRequired);
    reply.header("cache-control", authRequired ? "private, no-cache" : "no-cache");
    return {
      dl: `${publicUrl}/api/v1/crates`,
      api: publicUrl,
      ...(authRequired ? { "auth-required": true } : {}),
    };
  });
  app.get<{ Params: { "*": string } }>("/api/v1/cargo/index/*", async (request, reply) => {
    await authenticate(request, authRequired);
    const path = request.params["*"];
    const name = nameFromIndexPath(path);
    const crate = name === undefined ? undefined : await store.findCrate(canonicalCrateName(name));
    // `foo_bar` and `foo-bar` are one crate, but Cargo asks for the file of the name it knows.
    if (crate === undefined || crate.name.toLowerCase() !== name) {
      throw new HttpError(404, `index file ${path} not found`);
    }
    const etag = `"${crate.indexEtag}"`;
    const lastModified = new Date(crate.updatedAt).toUTCString();
    reply.headers({
      etag,
      "last-modified": lastModified,
      "cache-control": authRequired ? "private, no-cache" : "no-cache",
    });
    if (notModified(request, etag, crate.updatedAt)) return reply.code(304).send();
    let cached = index.get(crate.id);
    if (cached === undefined || cached.etag !== crate.indexEtag) {
      const lines = await store.indexLines(crate.id);
      const body = Buffer.from(`${lines.join("\n")}\n`);
      cached = { etag: crate.indexEtag, body, gzip: await gzipped(body) };
      index.set(crate.id, cached);
    }
    reply.type("text/plain; charset=utf-8").header("vary", "accept-encoding");
    // cargo sends `Accept-Encoding: deflate, gzip`: index lines repeat their keys, ~10× smaller.
    if (acceptsGzip(request.headers["accept-encoding"])) {
      return reply.header("content-encoding", "gzip").send(cached.gzip);
    }
    return reply.send(cached.body);
  });

  // ---- Browsing (cargo.md §5), Vigie's error format.
  app.get("/api/v1/registry/crates", async (request) => {
    await authenticate(request, authRequired);
    const query = isPlainObject(request.query) ? request.query : {};
    const page = pageParameter(query.page, "page", 1, 1_000_000, 1);
    const perPage = pageParameter(query.per_page, "per_page", 1, 100, 50);
    const found = await store.search([], perPage, (page - 1) * perPage);
    const live = await store.liveVersions(found.crates.map((crate) => crate.id));
    return {
      crates: found.crates.map((crate) => ({
        name: crate.name,
        "max-version": highest(live.get(crate.id) ?? []) ?? null,
        description: crate.description,
      })),
      total: found.total,
      page,
      "per-page": perPage,
    };
  });
  app.get<{ Params: { name: string } }>("/api/v1/registry/crates/:name", async (request) => {
    await authenticate(request, authRequired);
    const crate = await findCrate(request.params.name);
    const [versions, owners] = await Promise.all([store.versions(crate.id), store.owners(crate.id)]);
    return {
      name: crate.name,
      "max-version": highest(versions.filter((version) => !version.yanked).map((version) => version.vers)) ?? null,
      downloads: versions.reduce((sum, version) => sum + version.downloads, 0),
      owners: owners.map((owner) => ({ name: owner.login, description: owner.name })),
      versions: versions.map((version) => ({
        version: version.vers,
        yanked: version.yanked,
        "published-at": new Date(version.publishedAt).toISOString(),
        "published-by": version.publishedBy,
        downloads: version.downloads,
        size: version.size,
        checksum: version.cksum,
        ...version.metadata,
      })),
    };
  });

  // ---- GET /me: how to get a token (cargo's `login_url`).
  app.get("/me", async (_request, reply) => {
    const registry = escapeHtml(`sparse+${publicUrl}/api/v1/cargo/index/`);
    return reply
      .type("text/html; charset=utf-8")
      .header("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'")
      .send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Vigie: a token for Cargo</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}pre{background:#f4f4f4;padding:.75rem;overflow-x:auto}</style></head>
<body><h1>A token for Cargo</h1>
<p>Create a token with your Vigie user name and password:</p>
<pre>curl -X POST ${escapeHtml(publicUrl)}/api/v1/registry/token \\
  -H 'content-type: application/json' \\
  -d '{"name": "cargo on my laptop", "user": "me", "password": "…"}'</pre>
<p>Then give it to Cargo (it asks for the token on its standard input):</p>
<pre>cargo login --registry vigie</pre>
<p>with this registry in <code>.cargo/config.toml</code>:</p>
<pre>[registries.vigie]
index = "${registry}"
credential-provider = "cargo:token"</pre>
</body></html>
`);
  });

  // ---- Cargo's web API (cargo.md §2–3), Cargo's error format.
  app.register(
    async (cargo) => {
      cargo.removeAllContentTypeParsers();
      cargo.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
      cargo.setErrorHandler((error: FastifyError, request, reply) => {
        if (error instanceof HttpError) {
          return reply.code(error.statusCode).headers(error.headers).send(cargoError(error.message));
        }
        if (error instanceof ValidationError) return reply.code(400).send(cargoError(error.message));
        if (error.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
          // Refused before the handler: counted here.
          if (request.routeOptions.url === "/api/v1/crates/new") metrics.publish("too-large");
          return reply
            .code(413)
            .send(cargoError(`the request is larger than max-crate-size (${settings["max-crate-size"]} bytes)`));
        }
        if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
          return reply.code(error.statusCode).send(cargoError(error.message));
        }
        request.log.error({ err: error }, "cargo request failed");
        return reply.code(500).send(cargoError(`internal error (request id ${request.id})`));
      });
      cargo.setNotFoundHandler((request, reply) => {
        const path = request.url.split("?", 1)[0] as string;
        return reply.code(404).send(cargoError(`route ${request.method} ${path} not found`));
      });

      cargo.put(
        "/new",
        { bodyLimit: settings["max-crate-size"] + METADATA_ALLOWANCE },
        async (request: FastifyRequest) => {
          try {
            const answer = await publish(request);
            metrics.publish("ok");
            return answer;
          } catch (error) {
            metrics.publish(publishOutcome(error instanceof HttpError ? error.statusCode : 500));
            throw error;
          }
        },
      );

      const yank =
        (yanked: boolean) => async (request: FastifyRequest<{ Params: { name: string; version: string } }>) => {
          const principal = await requireUser(request);
          const crate = await findCrate(request.params.name);
          await requireOwner(principal, crate, "yank");
          const version = request.params.version;
          const found = isVersion(version) && (await store.setYanked(crate.id, versionKey(version), yanked, now()));
          if (!found) throw new HttpError(404, `crate ${crate.name} has no version ${version}`);
          return { ok: true };
        };
      cargo.delete("/:name/:version/yank", { bodyLimit: SMALL_BODY }, yank(true));
      cargo.put("/:name/:version/unyank", { bodyLimit: SMALL_BODY }, yank(false));

      cargo.get<{ Params: { name: string } }>("/:name/owners", async (request) => {
        await authenticate(request, authRequired);
        const crate = await findCrate(request.params.name);
        return { users: await store.owners(crate.id) };
      });
      const changeOwners = (add: boolean) => async (request: FastifyRequest<{ Params: { name: string } }>) => {
        const principal = await requireUser(request);
        const crate = await findCrate(request.params.name);
        await requireOwner(principal, crate, "change-owners");
        const names = ownerNames(request.body);
        const ids: string[] = [];
        for (const name of names) {
          const user = await users.find(name);
          if (user === undefined) throw new HttpError(404, `user ${name} not found`);
          ids.push(user.id);
        }
        if (add) await store.addOwners(crate.id, ids);
        else await store.removeOwners(crate.id, crate.name, ids);
        const who = names.length === 1 ? `user ${names[0]} has` : `users ${names.join(", ")} have`;
        const what = add ? "been added as an owner" : "been removed from the owners";
        return { ok: true, msg: `${who} ${what}${add && names.length > 1 ? "s" : ""} of crate ${crate.name}` };
      };
      cargo.put("/:name/owners", { bodyLimit: SMALL_BODY }, changeOwners(true));
      cargo.delete("/:name/owners", { bodyLimit: SMALL_BODY }, changeOwners(false));

      cargo.get("/", async (request) => {
        await authenticate(request, authRequired);
        const query = isPlainObject(request.query) ? request.query : {};
        const perPage = pageParameter(query.per_page, "per_page", 1, 100, 10);
        const q = query.q === undefined ? "" : query.q;
        if (typeof q !== "string" || q.length > 1000) {
          throw new HttpError(400, "query parameter q: must be one string of at most 1000 characters");
        }
        // cargo joins the words of `cargo search a b` with `+` before percent-encoding the query.
        const words = q.split(/[\s+]+/).filter((word) => word !== "");
        const found = await store.search(words.slice(0, 20), perPage);
        const live = await store.liveVersions(found.crates.map((crate) => crate.id));
        return {
          crates: found.crates.map((crate) => ({
            name: crate.name,
            // crates.io's answer for a crate whose every version is yanked.
            max_version: highest(live.get(crate.id) ?? []) ?? "0.0.0",
            description: crate.description,
          })),
          meta: { total: found.total },
        };
      });

      cargo.get<{ Params: { name: string; version: string } }>("/:name/:version/download", async (request, reply) => {
        await authenticate(request, authRequired);
        const version = await downloadable(request.params.name, request.params.version);
        let stream: Awaited<ReturnType<CrateFiles["open"]>>;
        try {
          stream = await files.open(version.canonical, version.vers);
        } catch (error) {
          request.log.error(
            { err: error, crate: version.name, version: version.vers },
            "a published .crate is missing",
          );
          throw new HttpError(500, `the file of ${version.name} ${version.vers} is missing: run vigie registry check`);
        }
        countDownload(version.id);
        metrics.downloads.inc();
        return reply
          .type("application/gzip")
          .headers({ "content-length": String(version.size), "cache-control": "public, max-age=31536000, immutable" })
          .send(stream);
      });
    },
    { prefix: "/api/v1/crates" },
  );

  /** A publish (cargo.md §3): checks, the file, then one transaction. */
  const publish = async (request: FastifyRequest) => {
    const principal = await requireUser(request);
    const body = request.body;
    if (!Buffer.isBuffer(body)) throw new HttpError(400, "the publish request has no body");
    const frame = parsePublishFrame(body);
    if (frame.crate.length > settings["max-crate-size"]) {
      throw new HttpError(
        413,
        `the .crate is ${frame.crate.length} bytes, over the registry's max-crate-size of ${settings["max-crate-size"]} bytes`,
      );
    }
    const metadata = publishMetadata(frame.metadata, { maxFeatures: settings["max-features"] });
    const canonical = canonicalCrateName(metadata.name);
    const existing = await store.findCrate(canonical);
    if (existing !== undefined && existing.name !== metadata.name) {
      throw new HttpError(
        400,
        `crate ${metadata.name} would be the same crate as ${existing.name} (names equal up to case, - and _): publish it as ${existing.name}`,
      );
    }
    const scope: CargoScope = existing === undefined ? "publish-new" : "publish-update";
    const missing = missingScope(principal, scope, metadata.name);
    if (missing !== undefined) throw new HttpError(403, missing);
    if (existing !== undefined) {
      await requireOwner(principal, existing, scope);
      if ((await store.findVersion(existing.id, versionKey(metadata.vers))) !== undefined) {
        throw new HttpError(409, `crate ${existing.name} version ${versionKey(metadata.vers)} already exists`);
      }
    }
    await checkCrateFile(frame.crate, metadata.name, metadata.vers);
    const cksum = sha256Hex(frame.crate);
    const line = indexLine(metadata, cksum, settings["max-index-line"]);
    const written = await files.write(canonical, metadata.vers, frame.crate);
    if (!written) {
      throw new HttpError(409, `crate ${metadata.name} version ${metadata.vers} is being published by another request`);
    }
    try {
      await store.publish({
        name: metadata.name,
        canonical,
        vers: metadata.vers,
        versKey: versionKey(metadata.vers),
        indexLine: line,
        cksum,
        size: frame.crate.length,
        description: metadata.description ?? "",
        keywords: metadata.keywords,
        metadata: {
          description: metadata.description,
          keywords: metadata.keywords,
          categories: metadata.categories,
          license: metadata.license,
          repository: metadata.repository,
          documentation: metadata.documentation,
          homepage: metadata.homepage,
          readme: metadata.readme,
        },
        userId: principal.id,
        admin: principal.role === "admin",
        now: now(),
      });
    } catch (error) {
      await files.remove(canonical, metadata.vers);
      throw error;
    }
    return { warnings: { invalid_categories: [], invalid_badges: [], other: [] } };
  };
}

/** Whether an `Accept-Encoding` header takes gzip (RFC 9110 §12.5.3; `gzip;q=0` refuses it). */
function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  for (const part of header.split(",")) {
    const [coding, ...parameters] = part.trim().toLowerCase().split(";");
    if (coding !== "gzip" && coding !== "x-gzip") continue;
    return !parameters.some((parameter) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(parameter));
  }
  return false;
}

/** Whether `If-None-Match` or (without it) `If-Modified-Since` says the client's copy is current. */
function notModified(request: FastifyRequest, etag: string, updatedAt: number): boolean {
  const match = request.headers["if-none-match"];
  if (match !== undefined) return match.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
  const since = request.headers["if-modified-since"];
  if (since === undefined) return false;
  const time = Date.parse(since);
  // HTTP dates have whole seconds.
  return !Number.isNaN(time) && Math.floor(updatedAt / 1000) * 1000 <= time;
}

/**
 * An integer query parameter between `min` and `max`, `fallback` when absent.
 * @throws HttpError 400 naming the parameter
 */
function pageParameter(value: unknown, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  const number = typeof value === "string" && /^\d{1,7}$/.test(value) ? Number(value) : Number.NaN;
  if (!(number >= min && number <= max)) {
    throw new HttpError(400, `query parameter ${name}: must be an integer between ${min} and ${max}`);
  }
  return number;
}

/**
 * The user names of an owners request, `{"users": ["a", "b"]}` (1 to 100 names).
 * @throws HttpError 400
 */
function ownerNames(body: unknown): string[] {
  let value: unknown;
  try {
    value = Buffer.isBuffer(body) ? JSON.parse(body.toString("utf8")) : undefined;
  } catch {
    throw new HttpError(400, 'the body is not JSON: send {"users": ["name"]}');
  }
  const users = isPlainObject(value) ? value.users : undefined;
  if (
    !Array.isArray(users) ||
    users.length === 0 ||
    users.length > 100 ||
    !users.every((user): user is string => typeof user === "string" && user.length > 0 && user.length <= 64)
  ) {
    throw new HttpError(400, 'field users: must be a list of 1 to 100 user names: {"users": ["name"]}');
  }
  return [...new Set(users)];
}
