/**
 * Settings: values Vigie generates once and keeps in the database, never only in memory, so that a
 * restart or another instance sees the same: the comments admin token and challenge secret.
 */
import type { Database } from "./database.js";

/** A setting read or created by {@link getOrCreateSetting}. */
export interface Setting {
  readonly value: string;
  /** True when this call generated and stored the value. */
  readonly created: boolean;
}

/**
 * Returns the setting `key`, generating and storing it first when it does not exist. Safe when
 * several Vigie processes share one database: the first insert wins and every process reads it.
 *
 * @param generate makes the value when the key is absent (called at most once)
 */
export async function getOrCreateSetting(database: Database, key: string, generate: () => string): Promise<Setting> {
  const existing = await readSetting(database, key);
  if (existing !== undefined) return { value: existing, created: false };
  const inserted = await database.kysely
    .insertInto("settings")
    .values({ key, value: generate() })
    .onConflict((conflict) => conflict.column("key").doNothing())
    .executeTakeFirst();
  const value = await readSetting(database, key);
  if (value === undefined) throw new Error(`setting ${key} vanished after it was written`);
  return { value, created: Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0 };
}

/** The value of setting `key`, or `undefined`. */
export async function readSetting(database: Database, key: string): Promise<string | undefined> {
  const row = await database.kysely.selectFrom("settings").select("value").where("key", "=", key).executeTakeFirst();
  return row?.value;
}
