/**
 * docs/cluster.md: a token revoked on one instance is refused by the two others within
 * one second, although each of them had just accepted it (their token caches are warm); likewise a
 * deactivated or deleted user.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, clusterSkip, createCluster, type Instance, sleep } from "./harness.js";

const SKIP = clusterSkip("the cluster revocation tests (test/cluster/revocation.test.ts)");

const TOKENS = "/api/v1/registry/token";
const USERS = "/api/v1/registry/user";

describe.skipIf(SKIP !== undefined)("token revocation across instances", () => {
  const cluster = createCluster({
    instances: 3,
    balancer: false,
    firstEnv: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "root-password" },
  });
  let admin = "";
  beforeAll(async () => {
    await cluster.start();
    await cluster.waitForStable(3);
    const [first] = cluster.instances;
    const created = await call(first?.baseUrl ?? "", "POST", TOKENS, {
      body: { name: "admin", user: "root", password: "root-password" },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    admin = created.body.token;
  }, 90_000);
  afterAll(() => cluster.stop(), 60_000);

  async function createUser(on: Instance, name: string): Promise<void> {
    const answer = await call(on.baseUrl, "POST", USERS, {
      token: admin,
      body: { name, description: "", password: `${name}-password`, role: "tech", active: true },
    });
    expect(answer, JSON.stringify(answer.body)).toMatchObject({ status: 201 });
  }

  async function createToken(on: Instance, user: string, name: string): Promise<string> {
    const answer = await call(on.baseUrl, "POST", TOKENS, { body: { name, user, password: `${user}-password` } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    return answer.body.token;
  }

  /** Uses the token on every instance a few times: accepted everywhere (caches warm). */
  async function warm(token: string): Promise<void> {
    for (let round = 0; round < 3; round += 1) {
      for (const instance of cluster.instances) {
        const answer = await call(instance.baseUrl, "GET", TOKENS, { token });
        expect(answer.status, `${instance.id}: ${JSON.stringify(answer.body)}`).toBe(200);
      }
    }
  }

  /**
   * Polls each instance every 25 ms (for up to 5 s, to report the real delay) until the token gets
   * `status`/`error`; returns the delay per instance in milliseconds since `since`.
   */
  async function refusalDelays(
    instances: readonly Instance[],
    token: string,
    since: number,
    status: number,
    error: string,
  ): Promise<Record<string, number>> {
    const delays: Record<string, number> = {};
    await Promise.all(
      instances.map(async (instance) => {
        for (;;) {
          const answer = await call(instance.baseUrl, "GET", TOKENS, { token });
          if (answer.status === status) {
            expect(answer.body).toEqual({ error });
            delays[instance.id] = Date.now() - since;
            return;
          }
          expect(answer.status, `${instance.id}: ${JSON.stringify(answer.body)}`).toBe(200);
          if (Date.now() - since > 5_000) {
            delays[instance.id] = Number.POSITIVE_INFINITY;
            return;
          }
          await sleep(25);
        }
      }),
    );
    return delays;
  }

  it("refuses a token revoked on one instance on the two others within one second (each instance in turn)", async () => {
    await createUser(cluster.instances[0] as Instance, "ops");
    for (const revoker of cluster.instances) {
      const name = `revoked-on-${revoker.id}`;
      const token = await createToken(revoker, "ops", name);
      await warm(token);
      const revoked = await call(revoker.baseUrl, "DELETE", `${TOKENS}/${name}`, { token });
      expect(revoked).toEqual({ status: 200, body: { ok: true } });
      const since = Date.now();
      // The revoking instance refuses it at once.
      expect(await call(revoker.baseUrl, "GET", TOKENS, { token })).toEqual({
        status: 401,
        body: { error: "invalid token" },
      });
      const others = cluster.instances.filter((instance) => instance !== revoker);
      const delays = await refusalDelays(others, token, since, 401, "invalid token");
      for (const other of others) {
        expect(
          delays[other.id],
          `delay (ms) before ${other.id} refused a token revoked on ${revoker.id}`,
        ).toBeLessThanOrEqual(1_000);
      }
    }
  }, 60_000);

  it("refuses the tokens of a user deactivated on one instance on the two others within one second", async () => {
    const [a, b, c] = cluster.instances as [Instance, Instance, Instance];
    await createUser(b, "tina");
    const token = await createToken(c, "tina", "laptop");
    await warm(token);
    const deactivated = await call(b.baseUrl, "POST", `${USERS}/tina`, { token: admin, body: { active: false } });
    expect(deactivated).toEqual({ status: 200, body: { ok: true } });
    const since = Date.now();
    const delays = await refusalDelays([a, c], token, since, 403, "user is not active");
    expect(delays.a, "delay (ms) before a refused the deactivated user's token").toBeLessThanOrEqual(1_000);
    expect(delays.c, "delay (ms) before c refused the deactivated user's token").toBeLessThanOrEqual(1_000);
  }, 30_000);

  it("refuses the tokens of a user deleted on one instance on the two others within one second", async () => {
    const [a, b, c] = cluster.instances as [Instance, Instance, Instance];
    await createUser(a, "gone");
    const token = await createToken(b, "gone", "ci");
    await warm(token);
    expect(await call(c.baseUrl, "DELETE", `${USERS}/gone`, { token: admin })).toEqual({
      status: 200,
      body: { ok: true },
    });
    const since = Date.now();
    const delays = await refusalDelays([a, b], token, since, 401, "invalid token");
    expect(delays.a, "delay (ms) before a refused the deleted user's token").toBeLessThanOrEqual(1_000);
    expect(delays.b, "delay (ms) before b refused the deleted user's token").toBeLessThanOrEqual(1_000);
  }, 30_000);
});
