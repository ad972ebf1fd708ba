/**
 * Cluster mode's latest results in PostgreSQL (docs/cluster.md): what one instance writes another
 * reads back whole, results of an older definition are ignored, and a bulk replacement racing with
 * the writes of every instance never deadlocks.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Catalog, Registration } from "../../src/healthchecks/catalog.js";
import { SharedResults } from "../../src/healthchecks/cluster.js";
import { type Definition, validateDefinition, viewOf } from "../../src/healthchecks/definition.js";
import { type HealthcheckResult, ResultStore } from "../../src/healthchecks/results.js";
import { HealthcheckStore } from "../../src/healthchecks/storage.js";
import { type Database, openDatabase } from "../../src/platform/database.js";
import { allMigrations } from "../../src/server.js";
import { createTestDatabase, POSTGRES_URL, type TestDatabase } from "../support/databases.js";

const RULES = { minInterval: { text: "1s", milliseconds: 1_000 } };
const silent = { warn: () => {} };

function http(name: string, path = "/"): Definition {
  return validateDefinition(
    "http",
    {
      name,
      target: "127.0.0.1",
      port: 9,
      path,
      "valid-status": [200],
      interval: "10s",
      timeout: "1s",
      labels: { team: "a" },
    },
    RULES,
    { unknownKeys: "ignore" },
  );
}

/** A catalog as SharedResults sees it: registered checks, none run here. */
function catalogOf(definitions: readonly Definition[], runsHere = false): Catalog {
  const registrations = new Map<string, Registration>();
  for (const definition of definitions) {
    registrations.set(definition.name, {
      definition,
      source: "api",
      view: viewOf(definition, "api"),
      labels: { team: "a" },
      shard: 0,
      series: undefined as unknown as Registration["series"],
    });
  }
  return { get: (name: string) => registrations.get(name), runsHere: () => runsHere } as unknown as Catalog;
}

function resultOf(catalog: Catalog, name: string, timestamp: string, success = true): HealthcheckResult {
  const registration = catalog.get(name) as Registration;
  return {
    name,
    configuration: registration.view,
    success,
    timestamp,
    message: success ? "success" : "connection refused",
    duration: 12,
    labels: { team: "a" },
  };
}

if (POSTGRES_URL === undefined) console.warn("shared results tests skipped: VIGIE_TEST_POSTGRES_URL is not set");

describe.skipIf(POSTGRES_URL === undefined)("shared latest results on PostgreSQL", () => {
  let test: TestDatabase;
  let database: Database;
  let storage: HealthcheckStore;

  beforeAll(async () => {
    test = await createTestDatabase("postgres");
    database = await openDatabase(test.url, allMigrations());
    storage = new HealthcheckStore(database);
  });

  afterAll(async () => {
    await database?.close();
    await test?.drop();
  });

  it("reads back on another instance what the owner wrote, with the reader's own view", async () => {
    const definitions = [http("a"), http("b")];
    const owner = catalogOf(definitions, true);
    const writer = new SharedResults(storage, owner, new ResultStore(), silent);
    writer.record(resultOf(owner, "a", "2026-11-24T10:00:00.000+00:00"));
    writer.record(resultOf(owner, "b", "2026-11-24T10:00:01.000+00:00", false));
    await writer.close();

    const reader = catalogOf(definitions);
    const results = new ResultStore();
    await new SharedResults(storage, reader, results, silent).refresh();
    expect(results.get("a")).toEqual(resultOf(reader, "a", "2026-11-24T10:00:00.000+00:00"));
    expect(results.get("b")).toEqual(resultOf(reader, "b", "2026-11-24T10:00:01.000+00:00", false));
  });

  it("ignores a result of another definition of the check, and one older than the local", async () => {
    const owner = catalogOf([http("c", "/old"), http("d")], true);
    const writer = new SharedResults(storage, owner, new ResultStore(), silent);
    writer.record(resultOf(owner, "c", "2026-11-24T10:00:00.000+00:00"));
    writer.record(resultOf(owner, "d", "2026-11-24T10:00:00.000+00:00"));
    await writer.close();

    const reader = catalogOf([http("c", "/new"), http("d")]);
    const results = new ResultStore();
    const newer = resultOf(reader, "d", "2026-11-24T10:05:00.000+00:00");
    results.set(newer);
    await new SharedResults(storage, reader, results, silent).refresh();
    expect(results.get("c")).toBeUndefined();
    expect(results.get("d")).toBe(newer);
  });

  it("never deadlocks a bulk replacement against the writes of several instances", async () => {
    const definitions = Array.from({ length: 3_000 }, (_, index) => http(`bulk-${index}`));
    await storage.replaceAll(definitions);
    const rows = definitions.map((definition) => [definition.name, '{"v":"x","s":true,"t":"","m":"","d":1}'] as const);
    // Three writers in different orders, and the replacement deleting every check, ten times over.
    for (let round = 0; round < 10; round++) {
      await Promise.all([
        storage.saveLatest(rows, round),
        storage.saveLatest([...rows].reverse(), round),
        storage.saveLatest(rows.slice(1_500).concat(rows.slice(0, 1_500)), round),
        storage.replaceAll(round % 2 === 0 ? [] : definitions),
      ]);
    }
    expect((await storage.list()).length).toBe(definitions.length);
  }, 60_000);
});
