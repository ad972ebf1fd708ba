/**
 * Incidents on SQLite and PostgreSQL (src/healthchecks/incidents/storage.ts): stored with their
 * pages and timeline, listed by page, time and openness, updated within the bound, deleted whole;
 * and shared by two servers over the same database (what one creates, the other lists and shows).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Incident } from "../../../src/healthchecks/incidents/incident.js";
import { IncidentStore } from "../../../src/healthchecks/incidents/storage.js";
import { healthchecksModule } from "../../../src/healthchecks/index.js";
import { healthcheckMigrations } from "../../../src/healthchecks/storage.js";
import { type Database, openDatabase, platformMigrations } from "../../../src/platform/database.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../../support/databases.js";
import { startTestServer } from "../../support/server.js";

const HOUR = 3_600_000;
const NOW = Date.parse("2026-03-10T12:00:00.000Z");

function incident(id: string, fields: Partial<Incident> = {}): Incident {
  return {
    id,
    title: `incident ${id.slice(0, 4)}`,
    checks: ["website"],
    pages: ["", "ops"],
    updates: [{ status: "investigating", message: "Looking into it. <b>", timeMs: NOW - 2 * HOUR }],
    ...fields,
  };
}

const ID = (digit: string) => `${digit.repeat(8)}-0000-4000-8000-${digit.repeat(12)}`;

describe.each(DATABASE_KINDS)("incident storage on $kind", ({ kind, skip }) => {
  let test: TestDatabase;
  let database: Database;
  beforeAll(async () => {
    if (skip) return;
    test = await createTestDatabase(kind);
    database = await openDatabase(test.url, { ...platformMigrations, ...healthcheckMigrations });
  });
  afterAll(async () => {
    if (skip) return;
    await database.close();
    await test.drop();
  });

  it.skipIf(skip)("stores, updates, lists and deletes incidents with their pages and timelines", async () => {
    const store = new IncidentStore(database);
    const first = incident(ID("a"));
    const second = incident(ID("b"), { pages: ["ops"], checks: [] });
    await store.insert(first);
    await store.insert(second);
    expect(await store.get(first.id)).toEqual({ ...first, pages: ["", "ops"] });
    expect(await store.get(ID("c"))).toBeUndefined();
    expect(await store.count()).toBe(2);

    const resolving = { status: "resolved" as const, message: "Fixed.", timeMs: NOW - HOUR };
    expect(await store.addUpdate(second.id, resolving, 10)).toBe("added");
    expect(await store.addUpdate(ID("c"), resolving, 10)).toBe("missing");
    expect(await store.addUpdate(second.id, resolving, 2)).toBe("full");
    expect((await store.get(second.id))?.updates).toEqual([...second.updates, resolving]);

    // Most recently updated first; by page; by time; open or resolved since.
    expect((await store.list({ limit: 10 })).map((item) => item.id)).toEqual([second.id, first.id]);
    expect((await store.list({ page: "", limit: 10 })).map((item) => item.id)).toEqual([first.id]);
    expect((await store.list({ page: "nowhere", limit: 10 })).map((item) => item.id)).toEqual([]);
    expect((await store.list({ sinceMs: NOW - 90 * 60_000, limit: 10 })).map((item) => item.id)).toEqual([second.id]);
    expect((await store.list({ limit: 1 })).map((item) => item.id)).toEqual([second.id]);
    const openOnly = await store.list({ openOrResolvedSinceMs: NOW - 30 * 60_000, limit: 10 });
    expect(openOnly.map((item) => item.id)).toEqual([first.id]);
    expect((await store.list({ openOrResolvedSinceMs: NOW - 2 * HOUR, limit: 10 })).length).toBe(2);

    // A message of the largest size and any text round-trips.
    const long = { status: "monitoring" as const, message: `é✓ 𝄞 ${"x".repeat(9_990)}`, timeMs: NOW };
    expect(await store.addUpdate(first.id, long, 100)).toBe("added");
    expect((await store.get(first.id))?.updates.at(-1)).toEqual(long);

    expect(await store.delete(first.id)).toBe(true);
    expect(await store.delete(first.id)).toBe(false);
    expect(await store.get(first.id)).toBeUndefined();
    expect((await store.list({ page: "ops", limit: 10 })).map((item) => item.id)).toEqual([second.id]);
    expect(await store.delete(second.id)).toBe(true);
    expect(await store.count()).toBe(0);
  });

  it.skipIf(skip)("appends concurrent updates of one incident without losing one", async () => {
    const store = new IncidentStore(database);
    const busy = incident(ID("d"));
    await store.insert(busy);
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        store.addUpdate(busy.id, { status: "monitoring", message: `u${index}`, timeMs: NOW + index }, 10),
      ),
    );
    expect(outcomes.filter((outcome) => outcome === "added")).toHaveLength(9);
    expect(outcomes.filter((outcome) => outcome === "full")).toHaveLength(3);
    expect((await store.get(busy.id))?.updates).toHaveLength(10);
    await store.delete(busy.id);
  });

  it.skipIf(skip)("shares incidents between servers over the same database", async () => {
    const start = () =>
      startTestServer({
        modules: [healthchecksModule],
        config: { database: { url: test.url }, healthchecks: { "status-pages": [{ slug: "", title: "Acme" }] } },
      });
    const first = await start();
    const second = await start();
    try {
      const body = { title: "Shared outage", status: "identified", message: "Known cause.", pages: [""] };
      const created = await first.app.inject({ method: "POST", url: "/incident", payload: body });
      expect(created.statusCode).toBe(201);
      const { id } = created.json() as { id: string };
      const listed = await second.app.inject({ method: "GET", url: "/incident" });
      expect(listed.json()).toContainEqual(
        expect.objectContaining({ id, title: "Shared outage", status: "identified" }),
      );
      const page = await second.app.inject({ method: "GET", url: "/status" });
      expect(page.body).toContain("Shared outage");
      expect((await second.app.inject({ method: "DELETE", url: `/incident/${id}` })).statusCode).toBe(200);
      expect((await first.app.inject({ method: "GET", url: `/incident/${id}` })).statusCode).toBe(404);
    } finally {
      await first.close();
      await second.close();
    }
  });
});
