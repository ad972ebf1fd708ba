/**
 * Two Vigie instances on one PostgreSQL database and one storage directory race to publish the
 * same versions (cargo.md §3): each round, exactly one publish succeeds and the other gets 409,
 * the index lists each version once, and the loser leaves no file behind. On PostgreSQL only: a
 * process lock could not decide between two instances, the unique constraint must.
 */
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRegistryModule } from "../../../src/registry/index.js";
import type { VigieServer } from "../../../src/server.js";
import { createTestDatabase, POSTGRES_URL, type TestDatabase } from "../../support/databases.js";
import { temporaryDirectory } from "../../support/process.js";
import { startTestServer } from "../../support/server.js";
import { publication } from "./frames.js";

const ROUNDS = 20;
const ADMIN = { VIGIE_ADMIN_NAME: "racer", VIGIE_ADMIN_PASSWORD: "racer-password-1" };

if (POSTGRES_URL === undefined) {
  console.log("skipping the publish race between two instances: VIGIE_TEST_POSTGRES_URL is not set");
}

describe.skipIf(POSTGRES_URL === undefined)("two instances on one PostgreSQL database", () => {
  let database: TestDatabase;
  const storage = temporaryDirectory();
  const servers: VigieServer[] = [];

  beforeAll(async () => {
    database = await createTestDatabase("postgres");
    for (let i = 0; i < 2; i++) {
      servers.push(
        await startTestServer({
          modules: [createRegistryModule({ environment: ADMIN })],
          config: { database: { url: database.url }, registry: { cargo: { enabled: true, storage } } },
        }),
      );
    }
  });

  afterAll(async () => {
    for (const server of servers) await server.close();
    await database?.drop();
    rmSync(storage, { recursive: true, force: true });
  });

  it("lets exactly one of two concurrent publishes of a version through, each round", async () => {
    const [one, two] = servers as [VigieServer, VigieServer];
    const created = await one.app.inject({
      method: "POST",
      url: "/api/v1/registry/token",
      payload: { name: "race", user: ADMIN.VIGIE_ADMIN_NAME, password: ADMIN.VIGIE_ADMIN_PASSWORD },
    });
    const token: string = created.json().token;
    const put = (server: VigieServer, body: Buffer) =>
      server.app.inject({ method: "PUT", url: "/api/v1/crates/new", headers: { authorization: token }, payload: body });

    for (let round = 0; round < ROUNDS; round++) {
      const vers = `0.${round}.0`;
      // Two different .crate files of one version: the loser's bytes must not replace the winner's.
      const [first, second] = await Promise.all([
        publication("racing", vers, { description: "first" }),
        publication("racing", vers, { description: "second" }, { "second.txt": "second" }),
      ]);
      const answers = await Promise.all([put(one, first.body), put(two, second.body)]);
      const statuses = answers.map((answer) => answer.statusCode).sort();
      expect([round, statuses]).toEqual([round, [200, 409]]);
      const loser = answers.find((answer) => answer.statusCode === 409);
      expect(loser?.json().errors[0].detail).toMatch(
        new RegExp(
          `^crate racing version ${vers.replace(/\./g, "\\.")} (already exists|is being published by another request)$`,
        ),
      );
      // The stored file is the winner's, byte for byte.
      const winner = answers[0]?.statusCode === 200 ? first : second;
      const download = await two.app.inject({ method: "GET", url: `/api/v1/crates/racing/${vers}/download` });
      expect(download.rawPayload.equals(winner.crate)).toBe(true);
    }

    const index = await one.app.inject({ method: "GET", url: "/api/v1/cargo/index/ra/ci/racing" });
    const versions = index.body
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line).vers);
    expect(versions).toHaveLength(ROUNDS);
    expect(new Set(versions).size).toBe(ROUNDS);
    // One file per version, no temporary file left.
    const files = readdirSync(join(storage, "racing")).sort();
    expect(files).toEqual(versions.map((vers: string) => `racing-${vers}.crate`).sort());
  });
});
