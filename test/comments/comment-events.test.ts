/**
 * New comments as stream events (docs/comments.md), through the platform's event sink into a real
 * streams module.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { commentEvent } from "../../src/comments/comment-events.js";
import { commentsModule } from "../../src/comments/index.js";
import type { VigieServer } from "../../src/server.js";
import { streamsModule } from "../../src/streams/index.js";
import { startTestServer } from "../support/server.js";
import { temporaryDirectory } from "../support/temporary.js";
import { ADMIN_TOKEN, addComment, CHALLENGE_SECRET } from "./support.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

describe("new comments as stream events", () => {
  it("have the fields of docs/comments.md, never the content nor the author's website", () => {
    expect(
      commentEvent({
        id: "6f1c9a2e-0000-4000-8000-000000000000",
        website: "blog",
        article: "my-post",
        author: "Ann <ann@example.org>",
        approved: false,
        timestamp: 1_767_225_600_123,
      }),
    ).toEqual({
      service: "comment",
      host: "blog",
      article: "my-post",
      "comment-id": "6f1c9a2e-0000-4000-8000-000000000000",
      author: "Ann <ann@example.org>",
      state: "pending",
      description: "New comment 6f1c9a2e-0000-4000-8000-000000000000 on article my-post",
      time: 1_767_225_600.123,
    });
  });

  let server: VigieServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("go into comments.streams when a comment is added, pending or approved", async () => {
    const directory = temporaryDirectory();
    writeFileSync(join(directory, "comments.edn"), "{:comments {:actions {:action :index :params [[:comment-id]]}}}");
    server = await startTestServer({
      modules: [commentsModule, streamsModule],
      config: {
        streams: { directories: [directory] },
        comments: {
          "admin-token": ADMIN_TOKEN,
          challenge: { secret: CHALLENGE_SECRET },
          streams: ["comments"],
          websites: [
            { name: "blog", "allowed-origins": ["*"] },
            { name: "wiki", "allowed-origins": ["*"], "auto-approve": true },
          ],
        },
      },
    });
    const app = (server as VigieServer).app;
    const first = await addComment(app, "blog", "my-post", {
      author: "Ann",
      content: "secret content",
      "author-website": "ann.example.org",
    });
    expect(first.statusCode).toBe(201);
    expect((await addComment(app, "wiki", "home", { author: "Bob" })).statusCode).toBe(201);
    const search = await app.inject({
      method: "GET",
      url: `/api/v1/index/comments/search?query=${encodeURIComponent(b64('[:= :service "comment"]'))}`,
    });
    const events = search.json().events as Array<Record<string, unknown>>;
    expect(events.map((event) => [event.host, event.article, event.author, event.state])).toEqual([
      ["blog", "my-post", "Ann", "pending"],
      ["wiki", "home", "Bob", "approved"],
    ]);
    expect(JSON.stringify(events)).not.toContain("secret content");
    expect(JSON.stringify(events)).not.toContain("ann.example.org");
    expect(events[0]?.description).toBe(`New comment ${events[0]?.["comment-id"]} on article my-post`);
  });
});
