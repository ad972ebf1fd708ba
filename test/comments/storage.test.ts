import { randomBytes } from "node:crypto";
import { type KyselyPlugin, type PluginTransformQueryArgs, type PluginTransformResultArgs, sql } from "kysely";
import { describe, expect, it } from "vitest";
import { CommentStore, type CommentTables, type NewComment, rateLimitLockKey } from "../../src/comments/storage.js";
import type { Database } from "../../src/platform/database.js";
import { DATABASE_KINDS } from "../support/databases.js";
import { commentsServers, fetchChallenge } from "./support.js";

const NOW = 1_700_000_000_000;
const MINUTE = 60_000;
/** A comment id as the store makes it. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A Kysely plugin that makes every insert into `table` fail, as a full disk or a lost connection would. */
function failingInsertsInto(table: string): KyselyPlugin {
  return {
    transformQuery({ node }: PluginTransformQueryArgs) {
      if (node.kind === "InsertQueryNode" && node.into?.table.identifier.name === table) {
        throw new Error(`insert into ${table} failed`);
      }
      return node;
    },
    transformResult: async ({ result }: PluginTransformResultArgs) => result,
  };
}

describe.each(DATABASE_KINDS)("comment storage on $kind", ({ kind, skip }) => {
  const servers = commentsServers(kind, skip);
  /** A server on the test database (it runs the migrations) and its open database. */
  const open = async (): Promise<Database> => (await servers.start()).context.database;

  /** Counts the rows of a table of the website (of the signature, for used challenges). */
  const counter = (db: Database) => {
    const tables = db.kysely.withTables<CommentTables>();
    return async (table: keyof CommentTables, key: string): Promise<number> => {
      const where =
        table === "comments_used_challenge" ? sql<boolean>`signature = ${key}` : sql<boolean>`website = ${key}`;
      const row = await tables
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number | string>().as("count"))
        .where(where)
        .executeTakeFirstOrThrow();
      return Number(row.count);
    };
  };

  const comment = (website: string, fields: Partial<NewComment> = {}): NewComment => ({
    website,
    article: "post",
    author: "Ann",
    authorWebsite: undefined,
    content: "Nice",
    approved: true,
    signature: randomBytes(32).toString("hex"),
    challengeExpiresAt: NOW + 10 * MINUTE,
    clientAddress: "10.0.0.1",
    now: NOW,
    ...fields,
  });

  it.skipIf(skip)("stores nothing when a challenge is issued", async () => {
    const db = await open();
    const app = servers.current().app;
    const count = counter(db);
    const signatures: string[] = [];
    for (let i = 0; i < 5; i++) signatures.push((await fetchChallenge(app, "issue", "post")).signature);
    for (const table of ["comments_comment", "comments_event", "comments_rate_limit_hit"] as const) {
      expect(await count(table, "issue")).toBe(0);
    }
    for (const signature of signatures) expect(await count("comments_used_challenge", signature)).toBe(0);
  });

  it.skipIf(skip)("writes no comment without its event: a failed event insert leaves nothing behind", async () => {
    const db = await open();
    const count = counter(db);
    const broken = new CommentStore(
      { ...db, kysely: db.kysely.withPlugin(failingInsertsInto("comments_event")) },
      { limit: 5, windowMs: 10 * MINUTE },
    );
    const input = comment("atomic", { signature: "ab".repeat(32) });
    await expect(broken.add(input)).rejects.toThrow("insert into comments_event failed");
    expect(await count("comments_comment", "atomic")).toBe(0);
    expect(await count("comments_event", "atomic")).toBe(0);
    expect(await count("comments_rate_limit_hit", "atomic")).toBe(0);
    expect(await count("comments_used_challenge", input.signature)).toBe(0);

    // The challenge was not used up: the same comment goes through once the database is well again.
    const store = new CommentStore(db, { limit: 5, windowMs: 10 * MINUTE });
    expect((await store.add(input)).id).toMatch(UUID);
    expect(await count("comments_comment", "atomic")).toBe(1);
    expect(await count("comments_event", "atomic")).toBe(1);
  });

  it.skipIf(skip)("lists comments and events of one millisecond by id", async () => {
    const db = await open();
    const store = new CommentStore(db, { limit: 100, windowMs: 10 * MINUTE });
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      ids.push((await store.add(comment("ties", { now: NOW }))).id);
    }
    const sorted = [...ids].sort();
    expect((await store.list("ties", "post", true)).map((one) => one.id)).toEqual(sorted);
    expect((await store.list("ties", "post", false)).map((one) => one.id)).toEqual(sorted);
    const events = await store.events("ties");
    expect(events.map((event) => event.id)).toEqual(events.map((event) => event.id).sort());
    expect((await store.deleteEvents("ties")).map((event) => event.id)).toEqual(events.map((event) => event.id));
  });

  it.skipIf(skip)("remembers a used signature until its challenge expires, and hits for the window", async () => {
    const db = await open();
    const count = counter(db);
    const store = new CommentStore(db, { limit: 1, windowMs: 10 * MINUTE });
    const expiresAt = NOW + 10 * MINUTE;
    const first = comment("purge", { signature: "cd".repeat(32), challengeExpiresAt: expiresAt });
    expect((await store.add(first)).id).toMatch(UUID);

    // A hit counts, and is kept, until it leaves the window.
    const later = comment("purge", { now: NOW + 10 * MINUTE - 1 });
    await store.purge(later.now);
    expect(await count("comments_rate_limit_hit", "purge")).toBe(1);
    await expect(store.add(later)).rejects.toMatchObject({
      code: "VIGIE_ERR_RATE_LIMITED",
      message: "too many comments from this address; retry in 1 s",
      headers: { "retry-after": "1" },
    });

    // Up to the instant the challenge expires, the purge keeps its signature: no replay.
    await store.purge(expiresAt);
    expect(await count("comments_rate_limit_hit", "purge")).toBe(0);
    expect(await count("comments_used_challenge", first.signature)).toBe(1);
    await expect(store.add({ ...first, now: expiresAt })).rejects.toMatchObject({
      code: "VIGIE_ERR_INVALID",
      message: "The challenge has already been used",
    });
    // After it, the signature may go (the challenge itself is refused as expired by then).
    await store.purge(expiresAt + 1);
    expect(await count("comments_used_challenge", first.signature)).toBe(0);
    expect((await store.add(comment("purge", { now: NOW + 10 * MINUTE }))).id).toMatch(UUID);
  });
});

describe("rateLimitLockKey", () => {
  it("is a signed 64-bit decimal, the same for the same pair and different for others", () => {
    const key = rateLimitLockKey("blog", "127.0.0.1");
    expect(key).toMatch(/^-?\d+$/);
    const value = BigInt(key);
    expect(value >= -(2n ** 63n) && value < 2n ** 63n).toBe(true);
    expect(rateLimitLockKey("blog", "127.0.0.1")).toBe(key);
    expect(rateLimitLockKey("blog", "127.0.0.2")).not.toBe(key);
    expect(rateLimitLockKey("blog1", "27.0.0.1")).not.toBe(key);
  });
});
