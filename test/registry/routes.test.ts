/**
 * The registry API through `app.inject()`, on SQLite and on PostgreSQL: every rule, status and
 * message of docs/registry.md.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createRegistryModule } from "../../src/registry/index.js";
import { hashPassword } from "../../src/registry/passwords.js";
import { registryDb, UserStore } from "../../src/registry/storage.js";
import { DAY_MS, hashToken, TOKEN_NAME_RULE } from "../../src/registry/tokens.js";
import type { VigieServer } from "../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";
import { startTestServer } from "../support/server.js";
import { RegistryClient } from "./client.js";
import { dropWhenClosed } from "./sessions.js";

const USERS = "/api/v1/registry/user";
const TOKENS = "/api/v1/registry/token";
const ROOT_PASSWORD = "root-password-1";
const BOB_PASSWORD = "bob-password-1";
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe.each(DATABASE_KINDS)("registry API on $kind", ({ kind, skip }) => {
  describe.skipIf(skip)("", () => {
    let testDatabase: TestDatabase;
    let server: VigieServer;
    let client: RegistryClient;
    let rootHash: string;
    /** The test clock: real time plus `offset` milliseconds. */
    let offset = 0;
    const now = () => Date.now() + offset;
    let root: string;

    beforeAll(async () => {
      testDatabase = await createTestDatabase(kind);
      const registry = createRegistryModule({
        environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: ROOT_PASSWORD },
        now,
      });
      server = await startTestServer({ modules: [registry], config: { database: { url: testDatabase.url } } });
      client = new RegistryClient(server.app);
      client.remember({ password: ROOT_PASSWORD });
      client.remember({ password: BOB_PASSWORD });
      rootHash = await hashPassword(ROOT_PASSWORD);
    });

    afterAll(async () => {
      await server?.close();
      await dropWhenClosed(testDatabase);
    });

    beforeEach(async () => {
      offset = 0;
      const db = registryDb(server.context.database);
      await db.deleteFrom("registry_token_failure").execute();
      await db.deleteFrom("registry_token").execute();
      await db.deleteFrom("registry_user").execute();
      await new UserStore(server.context.database).create(
        { name: "root", description: "first admin", role: "admin", active: true, passwordHash: rootHash },
        now(),
      );
      root = await client.token("root", ROOT_PASSWORD, "root-token");
    });

    /** Creates the tech user bob and returns a token of bob's. */
    async function bob(): Promise<string> {
      await client.user(root, { name: "bob", password: BOB_PASSWORD, description: "a tech" });
      return client.token("bob", BOB_PASSWORD, "bob-token");
    }

    async function metric(result: string): Promise<number> {
      const text = (await server.app.inject({ method: "GET", url: "/metrics" })).body;
      const match = new RegExp(`^registry_auth_total\\{result="${result}"\\} (\\d+)$`, "m").exec(text);
      return Number(match?.[1] ?? Number.NaN);
    }

    describe("authentication", () => {
      it("answers 401 missing token, 401 invalid token, raw or Bearer", async () => {
        expect(await client.call("GET", USERS)).toMatchObject({ status: 401, body: { error: "missing token" } });
        expect(await client.call("GET", USERS, { authorization: "Bearer " })).toMatchObject({
          status: 401,
          body: { error: "missing token" },
        });
        for (const authorization of ["Bearer nonsense", `Bearer vigie_${"A".repeat(43)}`, `${root}x`]) {
          expect(await client.call("GET", USERS, { authorization })).toMatchObject({
            status: 401,
            body: { error: "invalid token" },
          });
        }
        expect((await client.call("GET", USERS, { authorization: root })).status).toBe(200);
        expect((await client.call("GET", USERS, { authorization: `bearer ${root}` })).status).toBe(200);
      });

      it("refuses the tokens of an inactive user with 403 user is not active", async () => {
        const bobToken = await bob();
        expect((await client.call("GET", TOKENS, { token: bobToken })).status).toBe(200);
        const off = await client.call("POST", `${USERS}/bob`, { token: root, body: { active: false } });
        expect(off).toMatchObject({ status: 200, body: { ok: true } });
        expect(await client.call("GET", TOKENS, { token: bobToken })).toMatchObject({
          status: 403,
          body: { error: "user is not active" },
        });
        // Back on: the token works again.
        await client.call("POST", `${USERS}/bob`, { token: root, body: { active: true } });
        expect((await client.call("GET", TOKENS, { token: bobToken })).status).toBe(200);
      });

      it("answers 401 token expired for a token past its expiry date", async () => {
        // Never used, so not cached: the expiry is read from the database.
        const token = await client.token("root", ROOT_PASSWORD, "old");
        await registryDb(server.context.database)
          .updateTable("registry_token")
          .set({ expires_at: now() - 1000 })
          .where("hash", "=", hashToken(token))
          .execute();
        expect(await client.call("GET", TOKENS, { token })).toMatchObject({
          status: 401,
          body: { error: "token expired" },
        });
        // A cached token expires on time too.
        const short = await client.token("root", ROOT_PASSWORD, "short");
        expect((await client.call("GET", TOKENS, { token: short })).status).toBe(200);
        offset = 365 * DAY_MS;
        expect(await client.call("GET", TOKENS, { token: short })).toMatchObject({
          status: 401,
          body: { error: "token expired" },
        });
      });

      it("counts every guard outcome in registry_auth_total", async () => {
        const bobToken = await bob();
        const before = Object.fromEntries(
          await Promise.all(
            ["ok", "missing", "invalid", "expired", "inactive", "forbidden"].map(async (result) => [
              result,
              await metric(result),
            ]),
          ),
        );
        await client.call("GET", USERS, { token: root });
        await client.call("GET", USERS);
        await client.call("GET", USERS, { authorization: "nonsense" });
        await client.call("GET", USERS, { token: bobToken });
        await client.call("POST", `${USERS}/bob`, { token: root, body: { active: false } });
        await client.call("GET", TOKENS, { token: bobToken });
        expect(await metric("ok")).toBe(before.ok + 2);
        expect(await metric("missing")).toBe(before.missing + 1);
        expect(await metric("invalid")).toBe(before.invalid + 1);
        expect(await metric("forbidden")).toBe(before.forbidden + 1);
        expect(await metric("inactive")).toBe(before.inactive + 1);
        expect(await metric("expired")).toBe(before.expired);
        // A year later root's token has expired.
        offset = 366 * DAY_MS;
        expect(await client.call("GET", TOKENS, { token: root })).toMatchObject({
          status: 401,
          body: { error: "token expired" },
        });
        expect(await metric("expired")).toBe(before.expired + 1);
        expect(await metric("ok")).toBe(before.ok + 2);
      });
    });

    describe("users", () => {
      it("creates users (admin only) and lists them sorted by name without secrets", async () => {
        const bobToken = await bob();
        for (const name of ["zed", "Alice", "_x", "0day", "al.ice"]) {
          await client.user(root, { name, password: `${name}-password`, role: name === "zed" ? "admin" : "tech" });
        }
        expect(
          await client.call("POST", USERS, {
            token: bobToken,
            body: { name: "eve", description: "", password: "12345678", role: "admin", active: true },
          }),
        ).toMatchObject({ status: 403, body: { error: "forbidden" } });
        expect(await client.call("GET", USERS, { token: bobToken })).toMatchObject({
          status: 403,
          body: { error: "forbidden" },
        });

        const list = await client.call("GET", USERS, { token: root });
        expect(list.status).toBe(200);
        const users = list.body.users as Array<Record<string, unknown>>;
        expect(users.map((user) => user.name)).toEqual(["0day", "Alice", "_x", "al.ice", "bob", "root", "zed"]);
        for (const user of users) {
          expect(Object.keys(user).sort()).toEqual(["active", "description", "id", "name", "role"]);
          expect(user.id).toMatch(UUID_V4);
        }
        expect(users.find((user) => user.name === "bob")).toMatchObject({
          description: "a tech",
          active: true,
          role: "tech",
        });
        expect(users.find((user) => user.name === "zed")).toMatchObject({ role: "admin" });
        // A trailing slash on the collection is the same route; a GET of one user is not a route.
        expect((await client.call("GET", `${USERS}/`, { token: root })).status).toBe(200);
        expect((await client.call("GET", `${USERS}/bob`, { token: root })).status).toBe(405);
      });

      it("answers 409 user <name> already exists", async () => {
        await bob();
        const again = await client.call("POST", USERS, {
          token: root,
          body: { name: "bob", description: "", password: "another-password", role: "admin", active: true },
        });
        expect(again).toMatchObject({ status: 409, body: { error: "user bob already exists" } });
      });

      it("answers 400 naming the field and the rule", async () => {
        const valid = { name: "carl", description: "", password: "12345678", role: "tech", active: true };
        const cases: Array<[Record<string, unknown>, string]> = [
          [{ ...valid, name: undefined }, "field name: is required"],
          [{ ...valid, name: "" }, "field name: must not be empty"],
          [{ ...valid, name: "c a r l" }, "field name: must contain only the characters A-Z a-z 0-9 . _ -"],
          [{ ...valid, name: "c".repeat(65) }, "field name: must have at most 64 characters"],
          [{ ...valid, description: undefined }, "field description: is required"],
          [{ ...valid, description: "d".repeat(1001) }, "field description: must have at most 1000 characters"],
          [{ ...valid, password: undefined }, "field password: is required"],
          [{ ...valid, password: "1234567" }, "field password: must have at least 8 characters"],
          [{ ...valid, password: "p".repeat(1025) }, "field password: must have at most 1024 characters"],
          [{ ...valid, role: "owner" }, "field role: must be one of admin, tech"],
          [{ ...valid, role: undefined }, "field role: is required"],
          [{ ...valid, active: "yes" }, "field active: must be true or false"],
          [{ ...valid, active: undefined }, "field active: is required"],
        ];
        for (const [body, error] of cases) {
          expect(await client.call("POST", USERS, { token: root, body }), error).toMatchObject({
            status: 400,
            body: { error },
          });
        }
        expect(await client.call("POST", USERS, { token: root, body: [valid] })).toMatchObject({
          status: 400,
          body: { error: "request body must be an object" },
        });
        const notJson = await server.app.inject({
          method: "POST",
          url: USERS,
          headers: { authorization: `Bearer ${root}`, "content-type": "application/json" },
          payload: "{name:",
        });
        expect(notJson.statusCode).toBe(400);
        expect(notJson.json()).toEqual({ error: "request body is not valid JSON" });
        expect((await client.call("GET", USERS, { token: root })).body.users).toHaveLength(1);
      });

      it("lets an admin update any field of any user, and a tech user its description and password", async () => {
        const bobToken = await bob();
        expect(
          await client.call("POST", `${USERS}/bob`, {
            token: bobToken,
            body: { description: "changed by bob", password: "bob-new-password", name: "robert" },
          }),
        ).toMatchObject({ status: 200, body: { ok: true } });
        let users = (await client.call("GET", USERS, { token: root })).body.users;
        expect(users.map((user: { name: string }) => user.name)).toEqual(["bob", "root"]);
        expect(users[0]).toMatchObject({ description: "changed by bob", role: "tech", active: true });
        // The new password creates tokens, the old one no longer does.
        expect(
          (await client.call("POST", TOKENS, { body: { name: "x", user: "bob", password: BOB_PASSWORD } })).status,
        ).toBe(401);
        await client.token("bob", "bob-new-password", "x");

        for (const body of [{ role: "admin" }, { active: false }, { description: "x", active: true }]) {
          expect(await client.call("POST", `${USERS}/bob`, { token: bobToken, body })).toMatchObject({
            status: 403,
            body: { error: "only admins can change role or active" },
          });
        }
        expect(
          await client.call("POST", `${USERS}/root`, { token: bobToken, body: { description: "x" } }),
        ).toMatchObject({ status: 403, body: { error: "forbidden" } });
        expect(
          await client.call("POST", `${USERS}/ghost`, { token: bobToken, body: { description: "x" } }),
        ).toMatchObject({ status: 403, body: { error: "forbidden" } });

        expect(
          await client.call("POST", `${USERS}/bob`, {
            token: root,
            body: { description: "promoted", password: "bob-third-password", role: "admin", active: true },
          }),
        ).toMatchObject({ status: 200, body: { ok: true } });
        users = (await client.call("GET", USERS, { token: root })).body.users;
        expect(users[0]).toMatchObject({ name: "bob", description: "promoted", role: "admin", active: true });
        // The role change applies to bob's existing token at once.
        expect((await client.call("GET", USERS, { token: bobToken })).status).toBe(200);
      });

      it("answers 400 for an empty or invalid update and 404 for an unknown user", async () => {
        await bob();
        expect(await client.call("POST", `${USERS}/bob`, { token: root, body: {} })).toMatchObject({
          status: 400,
          body: { error: "request body must contain at least one of description, password, role, active" },
        });
        expect(await client.call("POST", `${USERS}/bob`, { token: root, body: { name: "robert" } })).toMatchObject({
          status: 400,
          body: { error: "request body must contain at least one of description, password, role, active" },
        });
        expect(await client.call("POST", `${USERS}/bob`, { token: root, body: { password: "short" } })).toMatchObject({
          status: 400,
          body: { error: "field password: must have at least 8 characters" },
        });
        expect(await client.call("POST", `${USERS}/bob`, { token: root, body: { role: "boss" } })).toMatchObject({
          status: 400,
          body: { error: "field role: must be one of admin, tech" },
        });
        expect(await client.call("POST", `${USERS}/ghost`, { token: root, body: { description: "x" } })).toMatchObject({
          status: 404,
          body: { error: "user ghost not found" },
        });
      });

      it("deletes a user and its tokens (admin only)", async () => {
        const bobToken = await bob();
        expect(await client.call("DELETE", `${USERS}/bob`, { token: bobToken })).toMatchObject({
          status: 403,
          body: { error: "forbidden" },
        });
        expect(await client.call("DELETE", `${USERS}/ghost`, { token: root })).toMatchObject({
          status: 404,
          body: { error: "user ghost not found" },
        });
        expect(await client.call("DELETE", `${USERS}/bob`, { token: root })).toMatchObject({
          status: 200,
          body: { ok: true },
        });
        expect(await client.call("GET", TOKENS, { token: bobToken })).toMatchObject({
          status: 401,
          body: { error: "invalid token" },
        });
        const left = await registryDb(server.context.database).selectFrom("registry_token").select("name").execute();
        expect(left).toEqual([{ name: "root-token" }]);
        expect((await client.call("GET", USERS, { token: root })).body.users).toHaveLength(1);
      });

      it("keeps at least one active admin (delete, demote, deactivate)", async () => {
        const lastAdmin = { status: 409, body: { error: "at least one active admin must remain" } };
        expect(await client.call("DELETE", `${USERS}/root`, { token: root })).toMatchObject(lastAdmin);
        expect(await client.call("POST", `${USERS}/root`, { token: root, body: { role: "tech" } })).toMatchObject(
          lastAdmin,
        );
        expect(await client.call("POST", `${USERS}/root`, { token: root, body: { active: false } })).toMatchObject(
          lastAdmin,
        );
        // An inactive admin does not count.
        await client.user(root, { name: "sleeper", password: "sleeper-password", role: "admin", active: false });
        expect(await client.call("POST", `${USERS}/root`, { token: root, body: { active: false } })).toMatchObject(
          lastAdmin,
        );
        // Nothing was changed by the refused requests.
        const users = (await client.call("GET", USERS, { token: root })).body.users;
        expect(users.find((user: { name: string }) => user.name === "root")).toMatchObject({
          role: "admin",
          active: true,
        });
        // With a second active admin, root may step down; then the other one is the last.
        await client.user(root, { name: "second", password: "second-password", role: "admin" });
        const second = await client.token("second", "second-password");
        expect((await client.call("POST", `${USERS}/root`, { token: root, body: { role: "tech" } })).status).toBe(200);
        expect(await client.call("DELETE", `${USERS}/second`, { token: second })).toMatchObject(lastAdmin);
        expect(await client.call("POST", `${USERS}/second`, { token: second, body: { active: false } })).toMatchObject(
          lastAdmin,
        );
        // Demoting an admin that is inactive anyway is fine.
        expect((await client.call("POST", `${USERS}/sleeper`, { token: second, body: { role: "tech" } })).status).toBe(
          200,
        );
        expect((await client.call("DELETE", `${USERS}/root`, { token: second })).status).toBe(200);
      });

      it("keeps one active admin when two admins step down at the same time", async () => {
        await client.user(root, { name: "second", password: "second-password", role: "admin" });
        const second = await client.token("second", "second-password");
        const answers = await Promise.all([
          client.call("POST", `${USERS}/root`, { token: root, body: { active: false } }),
          client.call("POST", `${USERS}/second`, { token: second, body: { role: "tech" } }),
        ]);
        expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
      });
    });

    describe("tokens", () => {
      it("creates tokens of the documented format, valid 365 days by default", async () => {
        const answer = await client.call("POST", TOKENS, {
          body: { name: "ci", user: "root", password: ROOT_PASSWORD },
        });
        expect(answer.status).toBe(201);
        expect(Object.keys(answer.body)).toEqual(["token"]);
        expect(answer.body.token).toMatch(/^vigie_[A-Za-z0-9_-]{43}$/);
        client.remember({ token: answer.body.token });
        for (const validity of [1, 3650]) {
          const created = await client.call("POST", TOKENS, {
            body: { name: `v${validity}`, user: "root", password: ROOT_PASSWORD, validity },
          });
          expect(created.status).toBe(201);
          client.remember({ token: created.body.token });
        }
        const list = await client.call("GET", TOKENS, { token: answer.body.token });
        expect(list.status).toBe(200);
        const tokens = list.body.tokens as Array<Record<string, string | null>>;
        expect(tokens.map((token) => token.name)).toEqual(["ci", "root-token", "v1", "v3650"]);
        for (const token of tokens) {
          expect(Object.keys(token).sort()).toEqual(["created-at", "expires-at", "id", "last-used-at", "name"]);
          expect(token.id).toMatch(UUID_V4);
          expect(token["created-at"]).toMatch(RFC3339_UTC);
          expect(token["expires-at"]).toMatch(RFC3339_UTC);
        }
        const days = (token: Record<string, string | null>) =>
          (Date.parse(token["expires-at"] as string) - Date.parse(token["created-at"] as string)) / DAY_MS;
        expect(tokens.map(days)).toEqual([365, 365, 1, 3650]);
        // Only the hash is stored.
        const stored = await registryDb(server.context.database)
          .selectFrom("registry_token")
          .select("hash")
          .where("name", "=", "ci")
          .executeTakeFirstOrThrow();
        expect(stored.hash).toBe(hashToken(answer.body.token));
      });

      it("answers 401 invalid user or password, 403 for an inactive user, 409 for a taken name", async () => {
        await bob();
        const invalid = { status: 401, body: { error: "invalid user or password" } };
        expect(
          await client.call("POST", TOKENS, { body: { name: "a", user: "ghost", password: "whatever1" } }),
        ).toMatchObject(invalid);
        expect(
          await client.call("POST", TOKENS, { body: { name: "a", user: "bob", password: "wrong-password" } }),
        ).toMatchObject(invalid);
        expect(
          await client.call("POST", TOKENS, { body: { name: "a", user: "bob", password: "short" } }),
        ).toMatchObject(invalid);
        expect(
          await client.call("POST", TOKENS, { body: { name: "bob-token", user: "bob", password: BOB_PASSWORD } }),
        ).toMatchObject({ status: 409, body: { error: "token bob-token already exists" } });
        // Another user may use the same token name.
        await client.token("root", ROOT_PASSWORD, "bob-token");
        await client.call("POST", `${USERS}/bob`, { token: root, body: { active: false } });
        expect(
          await client.call("POST", TOKENS, { body: { name: "b", user: "bob", password: BOB_PASSWORD } }),
        ).toMatchObject({ status: 403, body: { error: "user is not active" } });
        // An inactive user with a wrong password learns nothing.
        expect(
          await client.call("POST", TOKENS, { body: { name: "b", user: "bob", password: "wrong-password" } }),
        ).toMatchObject(invalid);
      });

      it("answers 400 naming the field of an invalid token request", async () => {
        const cases: Array<[Record<string, unknown>, string]> = [
          [{ user: "root", password: ROOT_PASSWORD }, "field name: is required"],
          [{ name: "", user: "root", password: ROOT_PASSWORD }, `field name: ${TOKEN_NAME_RULE}`],
          [{ name: "x".repeat(101), user: "root", password: ROOT_PASSWORD }, `field name: ${TOKEN_NAME_RULE}`],
          [{ name: "line\nbreak", user: "root", password: ROOT_PASSWORD }, `field name: ${TOKEN_NAME_RULE}`],
          [{ name: "tab\tname", user: "root", password: ROOT_PASSWORD }, `field name: ${TOKEN_NAME_RULE}`],
          [{ name: 12, user: "root", password: ROOT_PASSWORD }, `field name: ${TOKEN_NAME_RULE}`],
          [{ name: "a", password: ROOT_PASSWORD }, "field user: is required"],
          [{ name: "a", user: "root" }, "field password: is required"],
          [
            { name: "a", user: "root", password: ROOT_PASSWORD, validity: 0 },
            "field validity: must be an integer between 1 and 3650",
          ],
          [
            { name: "a", user: "root", password: ROOT_PASSWORD, validity: 3651 },
            "field validity: must be an integer between 1 and 3650",
          ],
          [
            { name: "a", user: "root", password: ROOT_PASSWORD, validity: "30" },
            "field validity: must be an integer between 1 and 3650",
          ],
        ];
        for (const [body, error] of cases) {
          expect(await client.call("POST", TOKENS, { body }), error).toMatchObject({ status: 400, body: { error } });
        }
      });

      it("takes about as long for an unknown user as for a wrong password", async () => {
        await bob();
        const time = async (user: string) => {
          const started = performance.now();
          const answer = await client.call("POST", TOKENS, { body: { name: "a", user, password: "wrong-password" } });
          expect(answer.status).toBe(401);
          return performance.now() - started;
        };
        const unknown: number[] = [];
        const known: number[] = [];
        for (let round = 0; round < 4; round += 1) {
          unknown.push(await time("ghost"));
          known.push(await time("bob"));
        }
        const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
        // Both verify one Argon2id hash (tens of milliseconds); a skipped verification would be ~1 ms.
        expect(median(unknown)).toBeGreaterThan(median(known) / 3);
      });

      it("lists and deletes a user's own tokens; an admin those of another user with ?user=", async () => {
        const bobToken = await bob();
        await client.token("bob", BOB_PASSWORD, "second");
        const own = await client.call("GET", TOKENS, { token: bobToken });
        expect(own.body.tokens.map((token: { name: string }) => token.name)).toEqual(["bob-token", "second"]);
        // last-used-at is written in the background, so compare what does not move.
        const ids = (answer: { body: { tokens: Array<{ id: string }> } }) =>
          answer.body.tokens.map((token) => token.id);
        expect(ids(await client.call("GET", `${TOKENS}?user=bob`, { token: bobToken }))).toEqual(ids(own));
        expect(await client.call("GET", `${TOKENS}?user=root`, { token: bobToken })).toMatchObject({
          status: 403,
          body: { error: "forbidden" },
        });
        const asAdmin = await client.call("GET", `${TOKENS}?user=bob`, { token: root });
        expect(asAdmin.body.tokens.map((token: { name: string }) => token.name)).toEqual(["bob-token", "second"]);
        expect(await client.call("GET", `${TOKENS}?user=ghost`, { token: root })).toMatchObject({
          status: 404,
          body: { error: "user ghost not found" },
        });
        expect(await client.call("GET", `${TOKENS}?user=a%20b`, { token: root })).toMatchObject({
          status: 400,
          body: { error: "query parameter user: must contain only the characters A-Z a-z 0-9 . _ -" },
        });

        expect(await client.call("DELETE", `${TOKENS}/second?user=root`, { token: bobToken })).toMatchObject({
          status: 403,
          body: { error: "forbidden" },
        });
        expect(await client.call("DELETE", `${TOKENS}/nope`, { token: bobToken })).toMatchObject({
          status: 404,
          body: { error: "token nope not found" },
        });
        expect(await client.call("DELETE", `${TOKENS}/second`, { token: bobToken })).toMatchObject({
          status: 200,
          body: { ok: true },
        });
        expect(await client.call("DELETE", `${TOKENS}/bob-token?user=bob`, { token: root })).toMatchObject({
          status: 200,
          body: { ok: true },
        });
        expect(await client.call("GET", TOKENS, { token: bobToken })).toMatchObject({
          status: 401,
          body: { error: "invalid token" },
        });
        expect((await client.call("GET", `${TOKENS}?user=bob`, { token: root })).body).toEqual({ tokens: [] });
        // A user may delete the token it is using.
        const self = await client.token("bob", BOB_PASSWORD, "self");
        expect((await client.call("DELETE", `${TOKENS}/self`, { token: self })).status).toBe(200);
        expect((await client.call("GET", TOKENS, { token: self })).status).toBe(401);
      });

      it("takes token names as people write them: spaces, accents, 100 characters; percent-encoded in DELETE", async () => {
        await bob();
        const names = ["laptop ci", "clé de déploiement", "a/b?c#d", `${"é".repeat(98)}🔑x`];
        for (const name of names) {
          expect(
            await client.call("POST", TOKENS, { body: { name, user: "bob", password: BOB_PASSWORD } }),
            name,
          ).toMatchObject({ status: 201 });
        }
        const bobToken = await client.token("bob", BOB_PASSWORD, "bob token two");
        const listed = await client.call("GET", TOKENS, { token: bobToken });
        expect(listed.body.tokens.map((token: { name: string }) => token.name).sort()).toEqual(
          ["bob-token", "bob token two", ...names].sort(),
        );
        // Unique per user, whatever the characters.
        expect(
          await client.call("POST", TOKENS, { body: { name: "laptop ci", user: "bob", password: BOB_PASSWORD } }),
        ).toMatchObject({ status: 409, body: { error: "token laptop ci already exists" } });
        for (const name of names) {
          expect(
            await client.call("DELETE", `${TOKENS}/${encodeURIComponent(name)}`, { token: bobToken }),
            name,
          ).toMatchObject({ status: 200, body: { ok: true } });
        }
        const left = await client.call("GET", TOKENS, { token: bobToken });
        expect(left.body.tokens.map((token: { name: string }) => token.name).sort()).toEqual([
          "bob token two",
          "bob-token",
        ]);
      });

      it("checks authentication, then permission, then validation: a tech user sending active gets 403 whatever the value", async () => {
        const bobToken = await bob();
        for (const active of [true, false, "yes", 12, null]) {
          expect(
            await client.call("POST", `${USERS}/bob`, { token: bobToken, body: { active } }),
            String(active),
          ).toMatchObject({ status: 403, body: { error: "only admins can change role or active" } });
        }
        expect(await client.call("POST", `${USERS}/bob`, { body: { active: "yes" } })).toMatchObject({
          status: 401,
          body: { error: "missing token" },
        });
      });

      it("writes last-used-at on first use, then at most once a minute", async () => {
        const token = await client.token("root", ROOT_PASSWORD, "watched");
        const lastUsed = async (): Promise<string | null> => {
          const row = await registryDb(server.context.database)
            .selectFrom("registry_token")
            .select("last_used_at")
            .where("name", "=", "watched")
            .executeTakeFirstOrThrow();
          return row.last_used_at === null ? null : new Date(row.last_used_at).toISOString();
        };
        const listed = async () => {
          const answer = await client.call("GET", TOKENS, { token: root });
          return answer.body.tokens.find((entry: { name: string }) => entry.name === "watched")["last-used-at"];
        };
        const settle = async (predicate: (value: string | null) => boolean) => {
          for (let attempt = 0; attempt < 50 && !predicate(await lastUsed()); attempt += 1) {
            await new Promise((wait) => setTimeout(wait, 20));
          }
          return lastUsed();
        };
        expect(await listed()).toBeNull();

        const firstUse = new Date(now()).toISOString();
        expect((await client.call("GET", TOKENS, { token })).status).toBe(200);
        const first = await settle((value) => value !== null);
        expect(first).not.toBeNull();
        expect(Date.parse(first as string)).toBeGreaterThanOrEqual(Date.parse(firstUse));
        expect(await listed()).toBe(first);

        offset += 30_000;
        for (let use = 0; use < 5; use += 1) expect((await client.call("GET", TOKENS, { token })).status).toBe(200);
        await new Promise((wait) => setTimeout(wait, 100));
        expect(await lastUsed()).toBe(first);

        offset += 31_000;
        expect((await client.call("GET", TOKENS, { token })).status).toBe(200);
        const second = await settle((value) => value !== first);
        expect(Date.parse(second as string) - Date.parse(first as string)).toBeGreaterThanOrEqual(61_000);
        expect(await listed()).toBe(second);
      });

      it("rate limits failed token creations per user: after 10 in 15 minutes, 429 with Retry-After from an address that failed", async () => {
        await bob();
        for (let attempt = 0; attempt < 10; attempt += 1) {
          const answer = await client.call("POST", TOKENS, {
            body: { name: "a", user: "bob", password: `wrong-${attempt}` },
            address: `10.0.0.${attempt}`,
          });
          expect(answer.status).toBe(401);
        }
        // Even the right password is refused now, before it is checked, from an address that failed.
        const limited = await client.call("POST", TOKENS, {
          body: { name: "a", user: "bob", password: BOB_PASSWORD },
          address: "10.0.0.3",
        });
        expect(limited.status).toBe(429);
        expect(limited.body.error).toMatch(/^too many failed attempts, retry in \d+ seconds$/);
        const retryAfter = Number(limited.headers["retry-after"]);
        expect(retryAfter).toBeGreaterThan(890);
        expect(retryAfter).toBeLessThanOrEqual(900);
        expect(limited.body.error).toBe(`too many failed attempts, retry in ${retryAfter} seconds`);
        // Other users are not affected.
        expect(
          (await client.call("POST", TOKENS, { body: { name: "a", user: "root", password: ROOT_PASSWORD } })).status,
        ).toBe(201);
        // 15 minutes later bob may try again.
        offset = 15 * 60_000;
        expect(
          (
            await client.call("POST", TOKENS, {
              body: { name: "a", user: "bob", password: BOB_PASSWORD },
              address: "10.0.0.3",
            })
          ).status,
        ).toBe(201);
      });

      it("never locks the real user out: failures from other addresses leave a fresh address its check", async () => {
        // Eleven wrong passwords for root, from addresses that are not root's (the eleventh, from an
        // address that had not failed, is checked too).
        for (let attempt = 0; attempt < 11; attempt += 1) {
          const answer = await client.call("POST", TOKENS, {
            body: { name: "a", user: "root", password: `wrong-${attempt}` },
            address: `198.51.100.${attempt}`,
          });
          expect(answer.status).toBe(401);
        }
        // The right password from an address that has not failed creates the token.
        const fresh = await client.call("POST", TOKENS, {
          body: { name: "admin-laptop", user: "root", password: ROOT_PASSWORD },
          address: "203.0.113.9",
        });
        expect(fresh.status).toBe(201);
        // Guessing is still limited: every address that failed is refused before its password is
        // checked (the right one included), and a fresh address gets one check only.
        for (const address of ["198.51.100.0", "198.51.100.10"]) {
          const refused = await client.call("POST", TOKENS, {
            body: { name: "b", user: "root", password: ROOT_PASSWORD },
            address,
          });
          expect(refused.status).toBe(429);
          expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
        }
        const guess = await client.call("POST", TOKENS, {
          body: { name: "b", user: "root", password: "another-guess" },
          address: "198.51.100.200",
        });
        expect(guess.status).toBe(401);
        const again = await client.call("POST", TOKENS, {
          body: { name: "b", user: "root", password: ROOT_PASSWORD },
          address: "198.51.100.200",
        });
        expect(again.status).toBe(429);
        expect(again.body.error).toBe(`too many failed attempts, retry in ${again.headers["retry-after"]} seconds`);
      });

      it("rate limits failed token creations per client address", async () => {
        await bob();
        for (let attempt = 0; attempt < 10; attempt += 1) {
          const answer = await client.call("POST", TOKENS, {
            body: { name: "a", user: `guess${attempt}`, password: "wrong-password" },
            address: "192.0.2.7",
          });
          expect(answer.status).toBe(401);
        }
        const limited = await client.call("POST", TOKENS, {
          body: { name: "a", user: "bob", password: BOB_PASSWORD },
          address: "192.0.2.7",
        });
        expect(limited.status).toBe(429);
        expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
        const elsewhere = await client.call("POST", TOKENS, {
          body: { name: "a", user: "bob", password: BOB_PASSWORD },
          address: "192.0.2.8",
        });
        expect(elsewhere.status).toBe(201);
        // Successes and refusals are not failures: nine more successes do not lock anyone out.
        for (let attempt = 0; attempt < 3; attempt += 1) {
          expect(
            (await client.call("POST", TOKENS, { body: { name: `b${attempt}`, user: "bob", password: BOB_PASSWORD } }))
              .status,
          ).toBe(201);
        }
      });
    });
  });
});
