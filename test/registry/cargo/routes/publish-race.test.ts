/**
 * Two instances of Vigie on one PostgreSQL database racing to publish the same crate version
 * (docs/cargo.md): exactly one succeeds, the other gets 409, the index holds the version once and the
 * loser leaves no file behind, whether the instances share their storage directory or not.
 * PostgreSQL only: SQLite is one instance's database.
 */
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRegistryModule } from "../../../../src/registry/index.js";
import type { VigieServer } from "../../../../src/server.js";
import { createTestDatabase, POSTGRES_URL, type TestDatabase } from "../../../support/databases.js";
import { startTestServer } from "../../../support/server.js";
import { temporaryDirectory } from "../../../support/temporary.js";
import { dropWhenClosed } from "../../sessions.js";
import { publication } from "../frames.js";

const ROOT_PASSWORD = "root-password-1";
const PASSWORD = "alice-password-1";
const ROUNDS = 20;

if (POSTGRES_URL === undefined) {
  console.log(
    "publish-race.test.ts skipped: set VIGIE_TEST_POSTGRES_URL to race two instances on one PostgreSQL database",
  );
}

/** Every file under a directory, relative paths, sorted. */
async function filesUnder(directory: string, relative = ""): Promise<string[]> {
  let entries: import("node:fs").Dirent[];
  try {
    entries = await readdir(join(directory, relative), { withFileTypes: true });
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "ENOENT") return [];
    throw error;
  }
  const found: string[] = [];
  for (const entry of entries) {
    const path = relative === "" ? entry.name : `${relative}/${entry.name}`;
    if (entry.isDirectory()) found.push(...(await filesUnder(directory, path)));
    else found.push(path);
  }
  return found.sort();
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe.skipIf(POSTGRES_URL === undefined)("two instances publishing the same version on PostgreSQL", () => {
  let testDatabase: TestDatabase;
  const servers: VigieServer[] = [];

  const start = (storage: string) =>
    startTestServer({
      modules: [
        createRegistryModule({ environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: ROOT_PASSWORD } }),
      ],
      config: {
        database: { url: testDatabase.url },
        http: { "public-url": "http://registry.test:8080" },
        registry: { enabled: true, cargo: { enabled: true, "auth-required": false, storage } },
      },
    });

  const inject = async (
    app: FastifyInstance,
    method: "GET" | "POST" | "PUT",
    url: string,
    headers: Record<string, string>,
    payload?: Buffer | string,
  ) => {
    const response = await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
    return { status: response.statusCode, text: response.body };
  };

  let alice: string;

  beforeAll(async () => {
    testDatabase = await createTestDatabase("postgres");
    // The first instance migrates the database; the others find it ready.
    const first = await start(temporaryDirectory("vigie-crates-"));
    servers.push(first);
    const login = await inject(
      first.app,
      "POST",
      "/api/v1/registry/token",
      { "content-type": "application/json" },
      JSON.stringify({ name: "root", user: "root", password: ROOT_PASSWORD }),
    );
    expect(login.status, login.text).toBe(201);
    const root = JSON.parse(login.text).token as string;
    const created = await inject(
      first.app,
      "POST",
      "/api/v1/registry/user",
      { "content-type": "application/json", authorization: `Bearer ${root}` },
      JSON.stringify({ name: "alice", password: PASSWORD, description: "", role: "tech", active: true }),
    );
    expect(created.status, created.text).toBe(201);
    const token = await inject(
      first.app,
      "POST",
      "/api/v1/registry/token",
      { "content-type": "application/json" },
      JSON.stringify({ name: "cargo", user: "alice", password: PASSWORD }),
    );
    expect(token.status, token.text).toBe(201);
    alice = JSON.parse(token.text).token as string;
  });

  afterAll(async () => {
    for (const server of servers.splice(0)) await server.close();
    await dropWhenClosed(testDatabase);
  });

  /**
   * Races `ROUNDS` rounds of one publish through each instance. Round i publishes version `0.i.0`
   * of crate `<prefix>-<i/2>` (so every other round creates the crate); with `buildVariants`, half
   * the rounds send `0.i.0+a` and `0.i.0+b`, one version for SemVer but two file names.
   */
  async function race(
    apps: readonly [FastifyInstance, FastifyInstance],
    storages: readonly [string, string],
    prefix: string,
    buildVariants: boolean,
  ): Promise<void> {
    const expected = new Map<string, { vers: string; crate: Buffer; winner: 0 | 1 }[]>();
    for (let round = 0; round < ROUNDS; round += 1) {
      const name = `${prefix}-${Math.floor(round / 2)}`;
      const differ = buildVariants && round % 4 >= 2;
      const versions = [0, 1].map((side) => `0.${round}.0${differ ? `+${side === 0 ? "a" : "b"}` : ""}`);
      // Different bytes from each side, so that a file overwritten by the loser would show.
      const made = await Promise.all(
        [0, 1].map((side) => publication(name, versions[side] as string, {}, { "side.txt": `side ${side}` })),
      );
      const answers = await Promise.all(
        [0, 1].map((side) =>
          inject(
            apps[side] as FastifyInstance,
            "PUT",
            "/api/v1/crates/new",
            { authorization: alice },
            made[side]?.body,
          ),
        ),
      );
      const statuses = answers.map((answer) => answer.status);
      expect([...statuses].sort(), `round ${round}: ${answers.map((answer) => answer.text).join(" | ")}`).toEqual([
        200, 409,
      ]);
      const loser = answers.find((answer) => answer.status === 409);
      expect(JSON.parse(loser?.text ?? "{}")).toEqual({ errors: [{ detail: expect.stringContaining(name) }] });
      const winner = statuses[0] === 200 ? 0 : 1;
      const list = expected.get(name) ?? [];
      list.push({ vers: versions[winner] as string, crate: made[winner]?.crate as Buffer, winner });
      expected.set(name, list);
    }

    const shared = storages[0] === storages[1];
    for (const [name, versions] of expected) {
      for (const app of apps) {
        const index = await inject(
          app,
          "GET",
          `/api/v1/cargo/index/${name.slice(0, 2)}/${name.slice(2, 4)}/${name}`,
          {},
        );
        expect(index.status, index.text).toBe(200);
        const lines = index.text
          .trimEnd()
          .split("\n")
          .map((line) => JSON.parse(line) as { vers: string; cksum: string });
        expect(lines.map((line) => [line.vers, line.cksum])).toEqual(
          versions.map((version) => [version.vers, sha256(version.crate)]),
        );
      }
      for (const side of [0, 1] as const) {
        const storage = storages[side];
        const mine = versions.filter((version) => shared || version.winner === side);
        // Exactly the winners' files, no loser's, no temporary file.
        expect(await filesUnder(join(storage, name))).toEqual(
          mine.map((version) => `${name}-${version.vers}.crate`).sort(),
        );
        for (const version of mine) {
          expect(await readFile(join(storage, name, `${name}-${version.vers}.crate`))).toEqual(version.crate);
        }
      }
      // The winner's bytes are what a download serves, from the instance whose storage holds them.
      const last = versions.at(-1);
      if (last !== undefined) {
        const from = apps[shared ? 1 - last.winner : last.winner] as FastifyInstance;
        const download = await from.inject({ method: "GET", url: `/api/v1/crates/${name}/${last.vers}/download` });
        expect(download.statusCode).toBe(200);
        expect(download.rawPayload).toEqual(last.crate);
      }
    }
  }

  it("keeps one publish of each version with a shared storage directory", async () => {
    const storage = temporaryDirectory("vigie-crates-");
    const a = await start(storage);
    servers.push(a);
    const b = await start(storage);
    servers.push(b);
    await race([a.app, b.app], [storage, storage], "shared", true);
  });

  it("keeps one publish of each version with a storage directory per instance", async () => {
    const storages = [temporaryDirectory("vigie-crates-"), temporaryDirectory("vigie-crates-")] as const;
    const a = await start(storages[0]);
    servers.push(a);
    const b = await start(storages[1]);
    servers.push(b);
    await race([a.app, b.app], storages, "apart", false);
  });
});
