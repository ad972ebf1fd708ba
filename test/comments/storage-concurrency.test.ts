import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { VigieServer } from "../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/databases.js";
import { admin, postComment, solvedBody, startComments } from "./support.js";

describe.each(DATABASE_KINDS)("comments under concurrency on $kind", ({ kind, skip }) => {
  let database: TestDatabase;
  const servers: VigieServer[] = [];
  beforeAll(async () => {
    if (!skip) database = await createTestDatabase(kind);
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });
  afterAll(async () => {
    if (!skip) await database.drop();
  });

  const start = async (comments: Record<string, unknown>) => {
    const server = await startComments(database.url, comments);
    servers.push(server);
    return server.app;
  };

  it.skipIf(skip)("stores 100 concurrent posts on one article, none lost, each with its event", async () => {
    const app = await start({ "rate-limit": { comments: 1000 } });
    const bodies = await Promise.all(
      Array.from({ length: 100 }, (_, index) => solvedBody(app, "busy", "post", { content: `comment ${index}` })),
    );
    const responses = await Promise.all(bodies.map((body) => postComment(app, "busy", "post", body)));
    expect(responses.map((response) => response.statusCode)).toEqual(Array(100).fill(201));

    const comments = (await admin(app, "GET", "/api/admin/comment/busy/post")).json();
    expect(comments).toHaveLength(100);
    expect(new Set(comments.map((comment: { id: string }) => comment.id)).size).toBe(100);
    expect(comments.map((comment: { content: string }) => comment.content).sort()).toEqual(
      bodies.map((body) => body.content).sort(),
    );
    const events = (await admin(app, "GET", "/api/admin/event/busy")).json();
    expect(events.map((event: { "comment-id": string }) => event["comment-id"]).sort()).toEqual(
      comments.map((comment: { id: string }) => comment.id).sort(),
    );
  });

  it.skipIf(skip)("accepts a challenge once when it is replayed concurrently", async () => {
    const app = await start({ "rate-limit": { comments: 1000 } });
    const body = await solvedBody(app, "race", "post");
    const responses = await Promise.all(Array.from({ length: 10 }, () => postComment(app, "race", "post", body)));
    const statuses = responses.map((response) => response.statusCode).sort();
    expect(statuses).toEqual([201, ...Array(9).fill(400)]);
    for (const response of responses.filter((one) => one.statusCode === 400)) {
      expect(response.json()).toEqual({ error: "The challenge has already been used" });
    }
    expect((await admin(app, "GET", "/api/admin/comment/race/post")).json()).toHaveLength(1);
  });

  it.skipIf(skip)("does not exceed the rate limit under concurrent posts", async () => {
    const app = await start({ "rate-limit": { comments: 5 } });
    const bodies = await Promise.all(Array.from({ length: 20 }, () => solvedBody(app, "flood", "post")));
    const responses = await Promise.all(bodies.map((body) => postComment(app, "flood", "post", body)));
    const statuses = responses.map((response) => response.statusCode).sort();
    expect(statuses).toEqual([...Array(5).fill(201), ...Array(15).fill(429)]);
  });

  // Several instances share one database only with PostgreSQL (docs/cluster.md).
  it.skipIf(skip || kind !== "postgres")(
    "enforces single use and the rate limit across two instances sharing the database",
    async () => {
      const first = await start({ "rate-limit": { comments: 5 } });
      const second = await start({ "rate-limit": { comments: 5 } });
      const body = await solvedBody(first, "shared", "replayed");
      const replays = await Promise.all([
        postComment(first, "shared", "replayed", body),
        postComment(second, "shared", "replayed", body),
      ]);
      expect(replays.map((response) => response.statusCode).sort()).toEqual([201, 400]);

      const bodies = await Promise.all(Array.from({ length: 20 }, () => solvedBody(first, "shared", "post")));
      const responses = await Promise.all(
        bodies.map((one, index) => postComment(index % 2 === 0 ? first : second, "shared", "post", one)),
      );
      // One comment of this address was accepted above already.
      const accepted = responses.filter((response) => response.statusCode === 201).length;
      expect(accepted).toBe(4);
      expect(responses.filter((response) => response.statusCode === 429)).toHaveLength(16);
    },
  );
});
