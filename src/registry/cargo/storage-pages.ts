/**
 * The queries of the registry's web pages (docs/cargo.md, "Web pages"), beside storage.ts's tables:
 * a crate's versions without their metadata (a README may weigh 1 MiB, and a crate may have a
 * thousand versions), then the metadata and index line of the one version the page shows.
 */
import type { Kysely } from "kysely";
import type { Database, PlatformTables } from "../../platform/database.js";
import { isPlainObject } from "../../platform/validation.js";
import type { RegistryTables } from "../storage.js";
import type { CargoTables } from "./storage.js";

/** One version in a crate page's list. */
export interface VersionSummary {
  readonly id: number;
  readonly vers: string;
  readonly yanked: boolean;
  readonly downloads: number;
  /** Milliseconds since the epoch. */
  readonly publishedAt: number;
  /** The publisher's name, or null once deleted. */
  readonly publishedBy: string | null;
}

/** What a crate page shows of one version besides its summary. */
export interface VersionDetail {
  /** The metadata kept from its publish (description, license, links, readme …). */
  readonly metadata: Readonly<Record<string, unknown>>;
  /** Its sparse index line (JSON): dependencies and features. */
  readonly indexLine: string;
}

/** The read-only queries of the web pages. */
export class CratePageStore {
  readonly #db: Kysely<PlatformTables & RegistryTables & CargoTables>;

  constructor(database: Database) {
    this.#db = database.kysely.withTables<RegistryTables & CargoTables>();
  }

  /** Every version of a crate in publication order, without metadata. */
  async summaries(crateId: number): Promise<VersionSummary[]> {
    const rows = await this.#db
      .selectFrom("registry_crate_version as v")
      .leftJoin("registry_user as u", "u.id", "v.published_by")
      .select(["v.id", "v.vers", "v.yanked", "v.downloads", "v.published_at", "u.name as publisher"])
      .where("v.crate_id", "=", crateId)
      .orderBy("v.id")
      .execute();
    return rows.map((row) => ({
      id: Number(row.id),
      vers: row.vers,
      yanked: row.yanked === 1,
      downloads: Number(row.downloads),
      publishedAt: Number(row.published_at),
      publishedBy: row.publisher,
    }));
  }

  /** The metadata and index line of a version, or `undefined` when it is gone. */
  async detail(versionId: number): Promise<VersionDetail | undefined> {
    const row = await this.#db
      .selectFrom("registry_crate_version")
      .select(["metadata", "index_line"])
      .where("id", "=", versionId)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    const metadata: unknown = JSON.parse(row.metadata);
    return { metadata: isPlainObject(metadata) ? metadata : {}, indexLine: row.index_line };
  }
}
