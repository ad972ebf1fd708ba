/**
 * Comment e-mail through the API, against a real SMTP server (Debian's aiosmtpd): the moderators'
 * message and its signed links (a confirming page on GET, the action on POST, refused once used or
 * expired), reply notifications with RFC 8058 one-click unsubscribe, and addresses that never show.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signLink } from "../../src/comments/mail-links.js";
import { MAIL_KEY_SETTING } from "../../src/comments/secrets.js";
import { readSetting } from "../../src/platform/settings.js";
import type { VigieServer } from "../../src/server.js";
import { DATABASE_KINDS } from "../support/databases.js";
import { type ReceivedMail, type SmtpServer, smtpUnavailable, startSmtpServer } from "../support/smtp.js";
import { addComment, admin, commentsServers } from "./support.js";

const unavailable = smtpUnavailable();
let smtp: SmtpServer;

beforeAll(async () => {
  if (unavailable === undefined) smtp = await startSmtpServer();
});
afterAll(async () => {
  await smtp?.stop();
});

const PUBLIC_URL = "http://vigie.test";

/** The comments section with e-mail through the `mail` output, and the outputs and http sections. */
function withMail(comments: Record<string, unknown>, email: Record<string, unknown> = {}) {
  return [
    {
      "rate-limit": { comments: 1000, per: "10m" },
      ...comments,
      email: { output: "mail", admin: ["mod@example.org", "Second.Mod@example.org"], ...email },
    },
    {
      config: {
        http: { "public-url": PUBLIC_URL },
        outputs: {
          mail: {
            type: "email",
            "smtp-url": smtp.url,
            from: "Vigie <vigie@example.org>",
            to: ["ops@example.org"],
            "max-retry-time": "2s",
          },
        },
      },
    },
  ] as const;
}

/** The path and query of a link of a message (`Approve: http://…`). */
function linkOf(mail: ReceivedMail, label: string): string {
  const match = new RegExp(`${label}: (\\S+)`).exec(mail.text ?? "");
  if (match?.[1] === undefined) throw new Error(`no ${label} link in ${mail.text}`);
  const url = new URL(match[1]);
  expect(url.origin).toBe(PUBLIC_URL);
  return `${url.pathname}${url.search}`;
}

/** The next `count` messages after those already received. */
function next(count: number): () => Promise<ReceivedMail[]> {
  const before = smtp.messages().length;
  return async () => (await smtp.received(before + count)).slice(before);
}

/** The id of the newest comment of a website, pending or approved. */
async function newest(
  app: FastifyInstance,
  website: string,
): Promise<{ id: string; approved: boolean; spam?: boolean }> {
  const [comment] = (await admin(app, "GET", `/api/admin/comment/${website}?limit=1`)).json();
  return comment;
}

describe.each(DATABASE_KINDS)("comment e-mail on $kind", ({ kind, skip }) => {
  const servers = commentsServers(kind, skip || unavailable !== undefined);
  const start = (comments: Record<string, unknown>, email?: Record<string, unknown>): Promise<VigieServer> =>
    servers.start(...withMail(comments, email));

  it.skipIf(skip || unavailable !== undefined)(
    "mails the moderators with approve and delete links that work once",
    async () => {
      const { app } = await start({ websites: [{ name: "blog" }] });
      const waiting = next(1);
      expect(
        (await addComment(app, "blog", "post", { author: "Ann <b>", content: "Hello & welcome" })).statusCode,
      ).toBe(201);
      const [mail] = await waiting();
      if (mail === undefined) throw new Error("no mail");
      // The moderators, never the output's own recipients.
      expect(mail.rcpt_tos.sort()).toEqual(["Second.Mod@example.org", "mod@example.org"].sort());
      expect(mail.headers.subject).toBe("New comment on post (blog) by Ann <b>");
      expect(mail.text).toContain("Hello & welcome");
      expect(mail.html).toContain("Ann &lt;b&gt;");
      const { id } = await newest(app, "blog");
      const approve = linkOf(mail, "Approve");

      // GET shows the comment and a form, and changes nothing (mail scanners follow links).
      const page = await app.inject({ url: approve });
      expect(page.statusCode).toBe(200);
      expect(page.headers["content-security-policy"]).toContain("default-src 'none'");
      expect(page.headers["referrer-policy"]).toBe("same-origin");
      expect(page.body).toContain('<form method="post"');
      expect(page.body).toContain("Hello &amp; welcome");
      expect((await newest(app, "blog")).approved).toBe(false);

      const done = await app.inject({
        method: "POST",
        url: approve,
        payload: "",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
      expect(done.statusCode, done.body).toBe(200);
      expect(done.body).toContain("Comment approved");
      expect((await app.inject({ url: "/api/v1/comment/blog/post" })).json()).toMatchObject([{ id, approved: true }]);
      // Used: refused on both methods.
      expect((await app.inject({ url: approve })).statusCode).toBe(409);
      expect((await app.inject({ method: "POST", url: approve })).statusCode).toBe(409);

      const remove = linkOf(mail, "Delete");
      expect((await app.inject({ url: remove })).statusCode).toBe(200);
      expect((await app.inject({ method: "POST", url: remove })).body).toContain("Comment deleted");
      expect((await app.inject({ url: "/api/v1/comment/blog/post" })).json()).toEqual([]);
      expect((await app.inject({ method: "POST", url: remove })).statusCode).toBe(404);
    },
  );

  it.skipIf(skip || unavailable !== undefined)("refuses expired, forged and cross-purpose links", async () => {
    const { app, context } = await start({ websites: [{ name: "blog" }] });
    expect((await addComment(app, "blog", "post")).statusCode).toBe(201);
    const { id } = await newest(app, "blog");
    const key = (await readSetting(context.database, MAIL_KEY_SETTING)) ?? "";
    const token = (action: "approve" | "unsubscribe", expiresAt: number, signingKey = key) =>
      signLink(signingKey, { action, commentId: id, expiresAt });
    const expired = `/comments/mail/moderate?token=${token("approve", Date.now() - 1)}`;
    for (const method of ["GET", "POST"] as const) {
      const answer = await app.inject({ method, url: expired });
      expect(answer.statusCode).toBe(400);
      expect(answer.body).toContain("Link expired");
    }
    const forged = `/comments/mail/moderate?token=${token("approve", Date.now() + 60_000, "another key")}`;
    expect((await app.inject({ method: "POST", url: forged })).body).toContain("Invalid link");
    expect((await app.inject({ method: "POST", url: "/comments/mail/moderate" })).statusCode).toBe(400);
    // An unsubscribe token does not approve, an approve token does not unsubscribe.
    const unsubscribe = token("unsubscribe", Date.now() + 60_000);
    expect((await app.inject({ method: "POST", url: `/comments/mail/moderate?token=${unsubscribe}` })).statusCode).toBe(
      400,
    );
    const approve = token("approve", Date.now() + 60_000);
    expect((await app.inject({ method: "POST", url: `/comments/mail/unsubscribe?token=${approve}` })).statusCode).toBe(
      400,
    );
    expect((await newest(app, "blog")).approved).toBe(false);
  });

  it.skipIf(skip || unavailable !== undefined)(
    "tells a commenter of replies, not of their own, until they unsubscribe in one click",
    async () => {
      const { app } = await start({ websites: [{ name: "open", moderation: "none" }] }, { "notify-admin": "all" });
      // Every comment mails the moderators (notify-admin: all), so waiting for those orders the rest.
      let waiting = next(1);
      const parentFields = { author: "Ann", email: "ann@example.org", "notify-replies": true };
      expect((await addComment(app, "open", "post", parentFields)).statusCode).toBe(201);
      await waiting();
      const parent = (await newest(app, "open")).id;

      waiting = next(2);
      expect((await addComment(app, "open", "post", { author: "Bob", content: "I disagree", parent })).statusCode).toBe(
        201,
      );
      const mails = await waiting();
      const reply = mails.find((mail) => mail.rcpt_tos.includes("ann@example.org"));
      if (reply === undefined) throw new Error("no reply notification");
      expect(reply.rcpt_tos).toEqual(["ann@example.org"]);
      expect(reply.text).toContain("I disagree");
      expect(reply.headers["list-unsubscribe-post"]).toBe("List-Unsubscribe=One-Click");
      const header = /^<(https?:\/\/\S+)>$/.exec(reply.headers["list-unsubscribe"] ?? "");
      if (header?.[1] === undefined) throw new Error(`bad List-Unsubscribe: ${reply.headers["list-unsubscribe"]}`);

      // Her own reply (same address, other case) mails the moderators only.
      waiting = next(1);
      expect(
        (await addComment(app, "open", "post", { author: "Ann", email: "ANN@example.org", parent })).statusCode,
      ).toBe(201);
      expect((await waiting()).map((mail) => mail.rcpt_tos.includes("ann@example.org"))).toEqual([false]);

      // GET shows a button and changes nothing; the one-click POST unsubscribes, twice is fine.
      const url = new URL(header[1]);
      const path = `${url.pathname}${url.search}`;
      expect((await app.inject({ url: path })).body).toContain('<form method="post"');
      const oneClick = {
        method: "POST" as const,
        url: path,
        payload: "List-Unsubscribe=One-Click",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      };
      expect((await app.inject(oneClick)).body).toContain("Unsubscribed");
      expect((await app.inject(oneClick)).statusCode).toBe(200);
      waiting = next(1);
      expect((await addComment(app, "open", "post", { author: "Cy", parent })).statusCode).toBe(201);
      expect((await waiting()).map((mail) => mail.rcpt_tos.includes("ann@example.org"))).toEqual([false]);

      // No address in any answer or event.
      for (const url of ["/api/admin/comment/open/post", "/api/admin/comment/open", "/api/admin/event/open"]) {
        expect((await admin(app, "GET", url)).body).not.toMatch(/ann@example\.org/i);
      }
      expect((await app.inject({ url: "/api/v1/comment/open/post" })).body).not.toMatch(/ann@example\.org/i);
    },
  );

  it.skipIf(skip || unavailable !== undefined)("announces a pending reply when a moderator approves it", async () => {
    const { app } = await start({ websites: [{ name: "blog" }] }, { "notify-admin": "none" });
    expect(
      (await addComment(app, "blog", "post", { email: "ann@example.org", "notify-replies": true })).statusCode,
    ).toBe(201);
    const parent = (await newest(app, "blog")).id;
    await admin(app, "POST", `/api/admin/comment/blog/post/${parent}`);
    expect((await addComment(app, "blog", "post", { author: "Bob", parent })).statusCode).toBe(201);
    const reply = (await newest(app, "blog")).id;
    const waiting = next(1);
    expect((await admin(app, "POST", `/api/admin/comment/blog/post/${reply}`)).statusCode).toBe(200);
    const [mail] = await waiting();
    expect(mail?.rcpt_tos).toEqual(["ann@example.org"]);
  });

  it.skipIf(skip || unavailable !== undefined)("announces a reply approved from the moderators' mail", async () => {
    const { app } = await start({ websites: [{ name: "blog" }] });
    let waiting = next(1);
    expect(
      (await addComment(app, "blog", "post", { email: "ann@example.org", "notify-replies": true })).statusCode,
    ).toBe(201);
    await waiting();
    const parent = (await newest(app, "blog")).id;
    await admin(app, "POST", `/api/admin/comment/blog/post/${parent}`);
    waiting = next(1);
    expect(
      (await addComment(app, "blog", "post", { author: "Bob", content: "Pending reply", parent })).statusCode,
    ).toBe(201);
    const [moderation] = await waiting();
    if (moderation === undefined) throw new Error("no moderation mail");
    waiting = next(1);
    expect((await app.inject({ method: "POST", url: linkOf(moderation, "Approve") })).statusCode).toBe(200);
    const [reply] = await waiting();
    expect(reply?.rcpt_tos).toEqual(["ann@example.org"]);
    expect(reply?.text).toContain("Pending reply");
  });
});
