/** `GET /:name/:version/download`: the `.crate` of a version, counted in batches. */
import type { FastifyInstance } from "fastify";
import { NotFoundError, VigieError } from "../../../platform/errors.js";
import type { CrateFiles } from "../files.js";
import { versionKey } from "../publish.js";
import { DOWNLOAD } from "./api.js";
import { type CargoContext, isVersion } from "./context.js";

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

/** Registers the download route on Cargo's web API. */
export function registerDownloads(cargo: FastifyInstance, context: CargoContext): void {
  const { authRequired, authenticate, findCrate, store, files, countDownload, metrics } = context;

  /**
   * A version to download, by the path's crate name and version. A published version never
   * changes (yanked ones are still downloaded, as Cargo expects), so lookups are remembered: a
   * download is then no database query.
   * @throws NotFoundError
   */
  const downloads = new Map<string, DownloadTarget>();
  const downloadable = async (name: string, requested: string): Promise<DownloadTarget> => {
    const key = `${name}/${requested}`;
    const known = downloads.get(key);
    if (known !== undefined) return known;
    const crate = await findCrate(name);
    const version = isVersion(requested) ? await store.findVersion(crate.id, versionKey(requested)) : undefined;
    if (version === undefined || version.vers !== requested) {
      throw new NotFoundError(`crate ${crate.name} has no version ${requested}`);
    }
    const { id, vers, size } = version;
    const target = { id, name: crate.name, canonical: crate.canonical, vers, size };
    if (downloads.size >= DOWNLOAD_CACHE_MAX) downloads.clear();
    downloads.set(key, target);
    return target;
  };

  const route = { config: { openapi: DOWNLOAD } };
  cargo.get<{ Params: { name: string; version: string } }>(
    "/:name/:version/download",
    route,
    async (request, reply) => {
      await authenticate(request, authRequired);
      const version = await downloadable(request.params.name, request.params.version);
      let stream: Awaited<ReturnType<CrateFiles["open"]>>;
      try {
        stream = await files.open(version.canonical, version.vers);
      } catch (error) {
        request.log.error({ err: error, crate: version.name, version: version.vers }, "a published .crate is missing");
        throw new VigieError(
          "VIGIE_ERR_INTERNAL",
          `the file of ${version.name} ${version.vers} is missing: run vigie registry check`,
        );
      }
      countDownload(version.id);
      metrics.downloads.inc();
      return reply
        .type("application/gzip")
        .headers({ "content-length": String(version.size), "cache-control": "public, max-age=31536000, immutable" })
        .send(stream);
    },
  );
}
