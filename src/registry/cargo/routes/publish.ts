/**
 * `PUT /api/v1/crates/new`, `cargo publish` (docs/cargo.md): the checks, the `.crate` file, then one
 * transaction; every outcome counted in `cargo_publish_total`.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import {
  ConflictError,
  ForbiddenError,
  InvalidError,
  STATUS_OF,
  TooLargeError,
  VigieError,
} from "../../../platform/errors.js";
import { checkCrateFile } from "../crate-file.js";
import { publishOutcome } from "../metrics.js";
import { canonicalCrateName } from "../names.js";
import { indexLine, parsePublishFrame, publishMetadata, sha256Hex, versionKey } from "../publish.js";
import { type CargoScope, missingScope } from "../scopes.js";
import { PUBLISH } from "./api.js";
import type { CargoContext } from "./context.js";

/** The full URL of a publish, as Fastify names the route. */
export const PUBLISH_URL = "/api/v1/crates/new";

/** Bytes a publish may carry besides the `.crate`: the metadata JSON and the two lengths. */
const METADATA_ALLOWANCE = 1024 * 1024 + 8;

/** Registers `PUT /new` on Cargo's web API. */
export function registerPublish(cargo: FastifyInstance, context: CargoContext): void {
  const { settings, metrics } = context;
  const options = { bodyLimit: settings["max-crate-size"] + METADATA_ALLOWANCE, config: { openapi: PUBLISH } };
  cargo.put("/new", options, async (request) => {
    try {
      const answer = await publish(request, context);
      metrics.publish("ok");
      return answer;
    } catch (error) {
      metrics.publish(publishOutcome(error instanceof VigieError ? STATUS_OF[error.code] : 500));
      throw error;
    }
  });
}

/**
 * A publish: who may, the frame and its metadata, the `.crate`, then the version stored with its
 * index line. The file written is removed again when the transaction fails.
 * @throws InvalidError, TooLargeError, ForbiddenError, ConflictError, or the authentication's errors
 */
async function publish(request: FastifyRequest, context: CargoContext) {
  const { settings, store, files, requireUser, requireOwner, releases, now } = context;
  const principal = await requireUser(request);
  const body = request.body;
  if (!Buffer.isBuffer(body)) throw new InvalidError("the publish request has no body");
  const frame = parsePublishFrame(body);
  if (frame.crate.length > settings["max-crate-size"]) {
    throw new TooLargeError(
      `the .crate is ${frame.crate.length} bytes, over the registry's max-crate-size of ${settings["max-crate-size"]} bytes`,
    );
  }
  const metadata = publishMetadata(frame.metadata, { maxFeatures: settings["max-features"] });
  const canonical = canonicalCrateName(metadata.name);
  const existing = await store.findCrate(canonical);
  if (existing !== undefined && existing.name !== metadata.name) {
    throw new InvalidError(
      `crate ${metadata.name} would be the same crate as ${existing.name} (names equal up to case, - and _): publish it as ${existing.name}`,
    );
  }
  const scope: CargoScope = existing === undefined ? "publish-new" : "publish-update";
  const missing = missingScope(principal, scope, metadata.name);
  if (missing !== undefined) throw new ForbiddenError(missing);
  if (existing !== undefined) {
    await requireOwner(principal, existing, scope);
    if ((await store.findVersion(existing.id, versionKey(metadata.vers))) !== undefined) {
      throw new ConflictError(`crate ${existing.name} version ${versionKey(metadata.vers)} already exists`);
    }
  }
  await checkCrateFile(frame.crate, metadata.name, metadata.vers);
  const cksum = sha256Hex(frame.crate);
  const line = indexLine(metadata, cksum, settings["max-index-line"]);
  const written = await files.write(canonical, metadata.vers, frame.crate);
  if (!written) {
    throw new ConflictError(`crate ${metadata.name} version ${metadata.vers} is being published by another request`);
  }
  const publishedAt = now();
  let stored: Awaited<ReturnType<typeof store.publish>>;
  try {
    stored = await store.publish({
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
      now: publishedAt,
    });
  } catch (error) {
    await files.remove(canonical, metadata.vers);
    throw error;
  }
  releases.publish({
    action: "publish",
    crate: stored.crateName,
    version: metadata.vers,
    user: principal.name,
    timeMs: publishedAt,
  });
  return { warnings: { invalid_categories: [], invalid_badges: [], other: [] } };
}
