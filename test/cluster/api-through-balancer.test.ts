/**
 * Each module's API tests through a load balancer that sends each request to a random instance of
 * three (docs/cluster.md: any instance answers any request), plus the cross-instance cases the
 * balancer hides: a challenge fetched from one instance and answered on another (and refused on a
 * third), one comment rate limit across instances, a healthcheck created through one instance
 * visible on every instance within one second, a stream created through one instance, pushed
 * through another and searched through a third.
 */
import { isDeepStrictEqual } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../support/until.js";
import { b64, call, clusterSkip, createCluster, type Instance, type JsonAnswer } from "./harness.js";

const SKIP = clusterSkip("the cluster API tests (test/cluster/api-through-balancer.test.ts)");

/** The answer of a math question `what is the result of: a op b`. */
function solve(question: string): string {
  const match = /^what is the result of: (\d+) ([-+*]) (\d+)$/.exec(question);
  if (match === null) throw new Error(`not a math question: ${question}`);
  const [x, y] = [Number(match[1]), Number(match[3])];
  return String(match[2] === "+" ? x + y : match[2] === "-" ? x - y : x * y);
}

/** Polls `probe` on every instance until each answers as `expected` wants; fails after `withinMs`. */
async function onEveryInstanceWithin(
  instances: readonly Instance[],
  withinMs: number,
  what: string,
  probe: (instance: Instance) => Promise<JsonAnswer>,
  expected: (answer: JsonAnswer) => boolean,
): Promise<void> {
  const since = Date.now();
  await Promise.all(
    instances.map(async (instance) => {
      let last: JsonAnswer | undefined;
      try {
        await until(
          async () => {
            last = await probe(instance);
            return expected(last) ? true : undefined;
          },
          `${what} on ${instance.id}`,
          withinMs,
        );
      } catch (error) {
        throw new Error(`${error} (${Date.now() - since} ms; last answer ${JSON.stringify(last)})`);
      }
    }),
  );
}

describe.skipIf(SKIP !== undefined)("the modules' APIs through a load balancer over three instances", () => {
  const cluster = createCluster({
    instances: 3,
    firstEnv: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: "root-password" },
  });
  const lb = (method: string, path: string, options: { body?: unknown; token?: string } = {}) =>
    call(cluster.balancer.url, method, path, options);
  let admin = "";
  beforeAll(async () => {
    await cluster.start();
    await cluster.waitForStable(3);
  }, 90_000);
  afterAll(() => cluster.stop(), 60_000);

  it("answers GET /healthz and GET /cluster through the balancer", async () => {
    for (let round = 0; round < 6; round += 1) {
      expect(await lb("GET", "/healthz")).toEqual({ status: 200, body: { message: "ok" } });
      const view = await lb("GET", "/cluster");
      expect(view.status).toBe(200);
      expect(["a", "b", "c"]).toContain(view.body.instance);
      expect(view.body.members.map((member: { id: string }) => member.id)).toEqual(["a", "b", "c"]);
    }
  });

  it("registry: tokens, users and roles through the balancer", async () => {
    const token = await lb("POST", "/api/v1/registry/token", {
      body: { name: "admin", user: "root", password: "root-password" },
    });
    expect(token.status, JSON.stringify(token.body)).toBe(201);
    admin = token.body.token;
    expect(admin).toMatch(/^vigie_[A-Za-z0-9_-]{43}$/);

    expect(
      await lb("POST", "/api/v1/registry/user", {
        token: admin,
        body: { name: "tina", description: "tech", password: "tina-password", role: "tech", active: true },
      }),
    ).toEqual({ status: 201, body: { ok: true } });
    expect(
      await lb("POST", "/api/v1/registry/user", {
        token: admin,
        body: { name: "tina", description: "again", password: "tina-password", role: "tech", active: true },
      }),
    ).toEqual({ status: 409, body: { error: "user tina already exists" } });
    const techAnswer = await lb("POST", "/api/v1/registry/token", {
      body: { name: "laptop", user: "tina", password: "tina-password" },
    });
    expect(techAnswer.status).toBe(201);
    const tech = techAnswer.body.token as string;
    expect(
      await lb("POST", "/api/v1/registry/token", { body: { name: "x", user: "tina", password: "wrong" } }),
    ).toEqual({ status: 401, body: { error: "invalid user or password" } });

    // Every instance knows both tokens at once (several rounds through the random balancer).
    for (let round = 0; round < 6; round += 1) {
      const users = await lb("GET", "/api/v1/registry/user", { token: admin });
      expect(users.status).toBe(200);
      expect(users.body.users.map((user: { name: string; role: string }) => [user.name, user.role])).toEqual([
        ["root", "admin"],
        ["tina", "tech"],
      ]);
      expect(await lb("GET", "/api/v1/registry/user", { token: tech })).toEqual({
        status: 403,
        body: { error: "forbidden" },
      });
      const own = await lb("GET", "/api/v1/registry/token", { token: tech });
      expect(own.status).toBe(200);
      expect(own.body.tokens.map((entry: { name: string }) => entry.name)).toEqual(["laptop"]);
    }
    expect(await lb("GET", "/api/v1/registry/user", {})).toEqual({ status: 401, body: { error: "missing token" } });
    expect(await lb("GET", "/api/v1/registry/user", { token: "vigie_nope" })).toEqual({
      status: 401,
      body: { error: "invalid token" },
    });
    expect(await lb("POST", "/api/v1/registry/user/tina", { token: tech, body: { description: "on call" } })).toEqual({
      status: 200,
      body: { ok: true },
    });
    expect(await lb("POST", "/api/v1/registry/user/tina", { token: tech, body: { role: "admin" } })).toEqual({
      status: 403,
      body: { error: "only admins can change role or active" },
    });
    const listed = await lb("GET", "/api/v1/registry/user", { token: admin });
    expect(listed.body.users).toContainEqual(expect.objectContaining({ name: "tina", description: "on call" }));
    const second = await lb("POST", "/api/v1/registry/token", {
      body: { name: "ci", user: "tina", password: "tina-password" },
    });
    expect(second.status).toBe(201);
    expect(await lb("DELETE", "/api/v1/registry/token/ci", { token: tech })).toEqual({
      status: 200,
      body: { ok: true },
    });
    const remaining = await lb("GET", "/api/v1/registry/token?user=tina", { token: admin });
    expect(remaining.body.tokens.map((entry: { name: string }) => entry.name)).toEqual(["laptop"]);
  }, 60_000);

  it("comments: a challenge fetched from one instance is answered on another and refused on a third", async () => {
    const [a, b, c] = cluster.instances as [Instance, Instance, Instance];
    const challenge = await call(a.baseUrl, "GET", "/api/v1/challenge/blog/post-1");
    expect(challenge.status).toBe(200);
    const comment = {
      author: "Ann",
      content: "First <b>comment</b>",
      answer: solve(challenge.body.question),
      signature: challenge.body.signature,
      timestamp: challenge.body.timestamp,
    };
    expect(await call(b.baseUrl, "POST", "/api/v1/comment/blog/post-1", { body: comment })).toEqual({
      status: 201,
      body: { message: "Comment added" },
    });
    expect(await call(c.baseUrl, "POST", "/api/v1/comment/blog/post-1", { body: comment })).toEqual({
      status: 400,
      body: { error: "The challenge has already been used" },
    });
    expect(await call(a.baseUrl, "POST", "/api/v1/comment/blog/post-1", { body: comment })).toEqual({
      status: 400,
      body: { error: "The challenge has already been used" },
    });
    const wrong = await call(c.baseUrl, "GET", "/api/v1/challenge/blog/post-1");
    expect(
      await call(a.baseUrl, "POST", "/api/v1/comment/blog/post-1", {
        body: {
          author: "Bob",
          content: "wrong answer",
          answer: String(Number(solve(wrong.body.question)) + 1),
          signature: wrong.body.signature,
          timestamp: wrong.body.timestamp,
        },
      }),
    ).toEqual({ status: 400, body: { error: "Bad challenge response" } });

    // The same through the balancer: challenge, post, moderation, public list, count, events.
    const viaLb = await lb("GET", "/api/v1/challenge/blog/post-1");
    expect(
      await lb("POST", "/api/v1/comment/blog/post-1", {
        body: {
          author: "Cid",
          content: "Second",
          answer: solve(viaLb.body.question),
          signature: viaLb.body.signature,
          timestamp: viaLb.body.timestamp,
        },
      }),
    ).toEqual({ status: 201, body: { message: "Comment added" } });
    const all = await lb("GET", "/api/admin/comment/blog/post-1", { token: admin });
    expect(all.status).toBe(200);
    expect(all.body.map((entry: { author: string; approved: boolean }) => [entry.author, entry.approved])).toEqual([
      ["Ann", false],
      ["Cid", false],
    ]);
    expect(all.body[0].content).toBe("First &lt;b&gt;comment&lt;/b&gt;");
    expect(await lb("GET", "/api/v1/comment/blog/post-1")).toEqual({ status: 200, body: [] });
    expect(await lb("POST", `/api/admin/comment/blog/post-1/${all.body[0].id}`, { token: admin })).toEqual({
      status: 200,
      body: { message: "Comment approved" },
    });
    // The moderation routes show it on every instance at once (the moderation API always reads the
    // database); the public list and count within a second (their per-instance cache lives at most
    // 1 s on PostgreSQL, src/comments/list-cache.ts).
    for (const instance of cluster.instances) {
      const moderation = await call(instance.baseUrl, "GET", "/api/admin/comment/blog/post-1", { token: admin });
      expect(
        moderation.body.map((entry: { id: string; approved: boolean }) => [entry.id, entry.approved]),
        instance.id,
      ).toEqual([
        [all.body[0].id, true],
        [all.body[1].id, false],
      ]);
    }
    await onEveryInstanceWithin(
      cluster.instances,
      1_000,
      "the approved comment in the public list",
      (instance) => call(instance.baseUrl, "GET", "/api/v1/comment/blog/post-1"),
      (answer) =>
        answer.status === 200 &&
        Array.isArray(answer.body) &&
        answer.body.map((entry: { id: string }) => entry.id).join() === all.body[0].id,
    );
    await onEveryInstanceWithin(
      cluster.instances,
      1_000,
      "the count of approved comments",
      (instance) => call(instance.baseUrl, "GET", "/api/v1/count/blog?article=post-1&article=post-2"),
      (answer) => isDeepStrictEqual(answer, { status: 200, body: { "post-1": 1, "post-2": 0 } }),
    );
    const events = await lb("GET", "/api/admin/event/blog", { token: admin });
    expect(events.status).toBe(200);
    expect(events.body.map((event: { type: string; "comment-id": string }) => event["comment-id"])).toEqual(
      all.body.map((entry: { id: string }) => entry.id),
    );
    expect(await lb("DELETE", `/api/admin/comment/blog/post-1/${all.body[1].id}`, { token: admin })).toEqual({
      status: 200,
      body: { message: "Comment deleted" },
    });
    for (const instance of cluster.instances) {
      expect(
        await call(instance.baseUrl, "GET", `/api/admin/comment/blog/post-1/${all.body[1].id}`, { token: admin }),
      ).toEqual({ status: 404, body: { error: `comment ${all.body[1].id} not found` } });
    }
  }, 60_000);

  it("comments: one rate limit across instances (5 comments per address and website, the 6th refused anywhere)", async () => {
    const instances = cluster.instances;
    const post = async (instance: Instance, index: number) => {
      const challenge = await call(instance.baseUrl, "GET", "/api/v1/challenge/limited/article");
      return call(instance.baseUrl, "POST", "/api/v1/comment/limited/article", {
        body: {
          author: `author ${index}`,
          content: `comment ${index}`,
          answer: solve(challenge.body.question),
          signature: challenge.body.signature,
          timestamp: challenge.body.timestamp,
        },
      });
    };
    for (let index = 0; index < 5; index += 1) {
      const answer = await post(instances[index % 3] as Instance, index);
      expect(answer, `comment ${index} on ${instances[index % 3]?.id}`).toEqual({
        status: 201,
        body: { message: "Comment added" },
      });
    }
    for (const instance of instances) {
      const response = await fetch(`${instance.baseUrl}/api/v1/challenge/limited/article`);
      const challenge = (await response.json()) as { question: string; signature: string; timestamp: number };
      const refused = await fetch(`${instance.baseUrl}/api/v1/comment/limited/article`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          author: "one too many",
          content: "sixth",
          answer: solve(challenge.question),
          signature: challenge.signature,
          timestamp: challenge.timestamp,
        }),
      });
      expect(refused.status, `sixth comment on ${instance.id}`).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      await refused.body?.cancel();
    }
  }, 60_000);

  it("healthchecks: created through one instance, on every instance's GET /healthcheck within 1 s, then deleted", async () => {
    const [a, b, c] = cluster.instances as [Instance, Instance, Instance];
    const definition = {
      name: "healthz-of-a",
      target: "127.0.0.1",
      port: a.port,
      path: "/healthz",
      "valid-status": [200],
      timeout: "1s",
      interval: "1s",
    };
    expect(await call(b.baseUrl, "POST", "/healthcheck/http", { body: definition })).toEqual({
      status: 201,
      body: { message: "Healthcheck successfully added" },
    });
    await onEveryInstanceWithin(
      cluster.instances,
      1_000,
      "the new healthcheck",
      (instance) => call(instance.baseUrl, "GET", "/healthcheck/healthz-of-a"),
      (answer) => answer.status === 200,
    );
    for (const instance of cluster.instances) {
      const answer = await call(instance.baseUrl, "GET", "/healthcheck/healthz-of-a");
      expect(answer.body).toMatchObject({ ...definition, kind: "http", source: "api", "one-off": false });
      const listed = await call(instance.baseUrl, "GET", "/healthcheck");
      expect(listed.body.map((check: { name: string }) => check.name)).toEqual(["healthz-of-a"]);
    }
    // Its latest result, read on any instance (the owner writes it to PostgreSQL).
    await onEveryInstanceWithin(
      cluster.instances,
      10_000,
      "the healthcheck's result",
      (instance) => call(instance.baseUrl, "GET", "/result/healthz-of-a"),
      (answer) => answer.status === 200 && answer.body.success === true && answer.body.message === "success",
    );
    const results = await lb("GET", "/result");
    expect(results.status).toBe(200);
    expect(results.body.map((result: { name: string }) => result.name)).toEqual(["healthz-of-a"]);

    // A replacement through a third instance reaches every instance within 1 s.
    expect(await call(c.baseUrl, "POST", "/healthcheck/http", { body: { ...definition, interval: "3s" } })).toEqual({
      status: 201,
      body: { message: "Healthcheck successfully added" },
    });
    await onEveryInstanceWithin(
      cluster.instances,
      1_000,
      "the replaced healthcheck",
      (instance) => call(instance.baseUrl, "GET", "/healthcheck/healthz-of-a"),
      (answer) => answer.status === 200 && answer.body.interval === "3s",
    );

    // A one-off check through the balancer.
    expect(
      await lb("POST", "/healthcheck/http", {
        body: { ...definition, name: "once", "one-off": true, interval: undefined },
      }),
    ).toEqual({ status: 201, body: { message: "One-off healthcheck once successfully executed" } });

    expect(await lb("DELETE", "/healthcheck/healthz-of-a")).toEqual({
      status: 200,
      body: { message: "Successfully deleted healthcheck healthz-of-a" },
    });
    await onEveryInstanceWithin(
      cluster.instances,
      1_000,
      "the deleted healthcheck to be gone",
      (instance) => call(instance.baseUrl, "GET", "/healthcheck/healthz-of-a"),
      (answer) => answer.status === 404 && answer.body.error === "healthcheck healthz-of-a not found",
    );
    // Its result goes with it (results reach PostgreSQL at most about a second late).
    await onEveryInstanceWithin(
      cluster.instances,
      2_000,
      "the deleted healthcheck's result to be gone",
      (instance) => call(instance.baseUrl, "GET", "/result"),
      (answer) => answer.status === 200 && Array.isArray(answer.body) && answer.body.length === 0,
    );
  }, 60_000);

  it("streams: created through one instance, pushed through another, searched through a third", async () => {
    const [a] = cluster.instances as [Instance, Instance, Instance];
    expect(
      await call(a.baseUrl, "POST", "/api/v1/stream/hosts", {
        body: { config: b64("{:actions {:action :index :params [[:host]]}}") },
      }),
    ).toEqual({ status: 201, body: { message: "stream added" } });
    await onEveryInstanceWithin(
      cluster.instances,
      1_000,
      "the new stream",
      (instance) => call(instance.baseUrl, "GET", "/api/v1/stream/hosts"),
      (answer) => answer.status === 200,
    );
    for (const instance of cluster.instances) {
      expect(await call(instance.baseUrl, "GET", "/api/v1/stream")).toEqual({
        status: 200,
        body: { streams: ["hosts"] },
      });
    }
    const owner = await until(() => cluster.streamOwner("hosts"), "an owner of stream hosts", 10_000);
    // Every view agrees on the owner.
    for (const instance of cluster.instances) expect((await cluster.streamOwner("hosts", instance))?.id).toBe(owner.id);
    const others = cluster.instances.filter((instance) => instance !== owner);
    const [pusher, searcher] = others as [Instance, Instance];

    const events = [
      { host: "h1", service: "cpu", metric: 1, time: 100, ttl: 1e9 },
      { host: "h2", service: "cpu", metric: 2, time: 101, ttl: 1e9 },
    ];
    // Through a non-owner (forwarded through JetStream), through the owner, through the balancer.
    expect(await call(pusher.baseUrl, "PUT", "/api/v1/stream/hosts", { body: { events } })).toEqual({
      status: 200,
      body: { message: "ok" },
    });
    const ownEvent = { host: "h3", service: "cpu", metric: 3, time: 102, ttl: 1e9 };
    expect(await call(owner.baseUrl, "PUT", "/api/v1/stream/hosts", { body: { event: ownEvent } })).toEqual({
      status: 200,
      body: { message: "ok" },
    });
    const lbEvent = { host: "h4", service: "cpu", metric: 4, time: 103, ttl: 1e9 };
    expect(await lb("PUT", "/api/v1/stream/hosts", { body: { event: lbEvent } })).toEqual({
      status: 200,
      body: { message: "ok" },
    });
    const everything = [...events, ownEvent, lbEvent];
    const query = encodeURIComponent(b64('[:= :service "cpu"]'));
    // A search on a non-owner is answered by the owner: every instance sees the same index.
    for (const instance of [searcher, pusher, owner]) {
      await until(
        async () => {
          const found = await call(instance.baseUrl, "GET", `/api/v1/index/hosts/search?query=${query}`);
          return found.status === 200 && isDeepStrictEqual(found.body.events, everything) ? true : undefined;
        },
        `the four events in the index, searched on ${instance.id}`,
        5_000,
      );
      expect(
        await call(instance.baseUrl, "POST", "/api/v1/index/hosts/search", {
          body: { query: b64('[:= :host "h2"]') },
        }),
      ).toEqual({ status: 200, body: { events: [events[1]] } });
      expect(await call(instance.baseUrl, "GET", "/api/v1/index/hosts/current-time")).toEqual({
        status: 200,
        body: { "current-time": 103 },
      });
    }
    const config = await lb("GET", "/api/v1/stream/hosts");
    expect(config.status).toBe(200);
    expect(Buffer.from(config.body.config, "base64").toString("utf8")).toContain(":index");

    expect(await lb("DELETE", "/api/v1/stream/hosts")).toEqual({ status: 200, body: { message: "stream removed" } });
    await onEveryInstanceWithin(
      cluster.instances,
      1_000,
      "the deleted stream to be gone",
      (instance) => call(instance.baseUrl, "GET", "/api/v1/stream/hosts"),
      (answer) => answer.status === 404 && answer.body.error === "stream hosts not found",
    );
    for (const instance of cluster.instances) {
      expect(await call(instance.baseUrl, "PUT", "/api/v1/stream/hosts", { body: { event: lbEvent } })).toEqual({
        status: 404,
        body: { error: "stream hosts not found" },
      });
      expect(await call(instance.baseUrl, "GET", "/api/v1/stream")).toEqual({ status: 200, body: { streams: [] } });
    }
  }, 60_000);

  it("spread the requests over the three instances", () => {
    for (const instance of cluster.instances) {
      expect(cluster.balancer.served.get(instance.id) ?? 0, `requests served by ${instance.id}`).toBeGreaterThan(3);
    }
  });
});
