/**
 * Replies and the commenter's e-mail address through the API: `parent` must be an approved comment
 * of the same article (400 naming `parent` otherwise), lists carry `parent`, deleting a parent keeps
 * its replies, replies count; `email` and `notify-replies` are checked, stored and never returned.
 */
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { DATABASE_KINDS } from "../support/databases.js";
import { ADMIN_TOKEN, addComment, admin, commentsServers } from "./support.js";

const WEBSITES = {
  "rate-limit": { comments: 1000, per: "10m" },
  websites: [
    { name: "open", "allowed-origins": ["*"], "auto-approve": true },
    { name: "moderated", "allowed-origins": ["*"] },
  ],
};

describe.each(DATABASE_KINDS)("replies on $kind", ({ kind, skip }) => {
  const servers = commentsServers(kind, skip);

  /** Posts a comment and returns its id, read from the admin list of the article. */
  const post = async (website: string, article: string, fields: Record<string, unknown> = {}): Promise<string> => {
    const app = servers.current().app;
    const response = await addComment(app, website, article, fields);
    expect(response.statusCode, response.body).toBe(201);
    const all = (await admin(app, "GET", `/api/admin/comment/${website}/${article}`)).json() as { id: string }[];
    return all.at(-1)?.id ?? "";
  };

  it.skipIf(skip)("takes a reply to an approved comment of the article and lists it with its parent", async () => {
    const { app } = await servers.start(WEBSITES);
    const parent = await post("open", "post", { author: "Ann" });
    const reply = await post("open", "post", { author: "Bob", parent: parent.toUpperCase() });
    const deeper = await post("open", "post", { author: "Cy", parent: reply });
    const list = (await app.inject({ url: "/api/v1/comment/open/post" })).json() as Record<string, unknown>[];
    expect(list.map((comment) => [comment.author, comment.parent])).toEqual([
      ["Ann", undefined],
      ["Bob", parent],
      ["Cy", reply],
    ]);
    expect(list[0]).not.toHaveProperty("parent");
    expect((await app.inject({ url: "/api/v1/count/open?article=post" })).json()).toEqual({ post: 3 });
    // Deleting the parent keeps its replies, which still name it.
    expect((await admin(app, "DELETE", `/api/admin/comment/open/post/${parent}`)).statusCode).toBe(200);
    const after = (await app.inject({ url: "/api/v1/comment/open/post" })).json() as Record<string, unknown>[];
    expect(after.map((comment) => [comment.id, comment.parent])).toEqual([
      [reply, parent],
      [deeper, reply],
    ]);
    void deeper;
  });

  it.skipIf(skip)("refuses an unknown, unapproved or other-article parent with a 400 naming parent", async () => {
    const { app } = await servers.start(WEBSITES);
    const elsewhere = await post("open", "other");
    const pending = await post("moderated", "refused");
    const refusal = { error: "field parent: must be the id (a UUID) of an approved comment of this article" };
    for (const [website, parent] of [
      ["open", randomUUID()],
      ["open", elsewhere],
      ["moderated", pending],
      ["open", "not-a-uuid"],
      ["open", 42],
    ] as const) {
      const response = await addComment(app, website, "refused", { parent });
      expect(response.statusCode, `${website} ${parent}`).toBe(400);
      expect(response.json()).toEqual(refusal);
    }
    // A refused reply leaves nothing: the article has no comment.
    expect((await admin(app, "GET", "/api/admin/comment/open/refused")).json()).toEqual([]);
    // null is a top-level comment.
    expect((await addComment(app, "open", "refused", { parent: null })).statusCode).toBe(201);
  });

  it.skipIf(skip)("stores an e-mail address and notify-replies, never returns them, and checks them", async () => {
    const server = await servers.start(WEBSITES);
    const { app } = server;
    const id = await post("open", "mail", { email: "ann@example.org", "notify-replies": true });
    for (const url of ["/api/v1/comment/open/mail", "/api/v1/comment/open/mail?limit=10"]) {
      expect((await app.inject({ url })).body).not.toContain("ann@example.org");
    }
    for (const url of [
      `/api/admin/comment/open/mail/${id}`,
      "/api/admin/comment/open/mail",
      "/api/admin/comment/open",
      "/api/admin/event/open",
    ]) {
      const response = await admin(app, "GET", url, ADMIN_TOKEN);
      expect(response.statusCode).toBe(200);
      expect(response.body).not.toContain("ann@example.org");
    }
    const { rows } = await sql<{
      email: string;
      notify_replies: number;
    }>`select email, notify_replies from comments_comment where id = ${id}`.execute(server.context.database.kysely);
    expect(rows).toEqual([{ email: "ann@example.org", notify_replies: 1 }]);

    for (const email of ["no-at-sign", "a@b", "a b@example.org", `${"x".repeat(250)}@example.org`, 7]) {
      const response = await addComment(app, "open", "mail", { email });
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toMatch(/^field email: must be an e-mail address/);
      // The address is never echoed.
      if (typeof email === "string") expect(response.body).not.toContain(email);
    }
    const wrong = await addComment(app, "open", "mail", { "notify-replies": "yes" });
    expect(wrong.json()).toEqual({ error: "field notify-replies: must be true or false" });
    // Blank is no address.
    expect((await addComment(app, "open", "mail", { email: "  " })).statusCode).toBe(201);
  });
});
