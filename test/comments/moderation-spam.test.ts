/**
 * Moderation modes and spam signals through the API: `first` approves authors already approved
 * with the same name and address, `none` approves at once unless the text holds too many links,
 * the honeypot drops a comment behind the usual 201 and logs a `spam` event, a challenge answered
 * too fast is refused, and an Akismet-compatible service (a local receiver) holds spam apart.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DATABASE_KINDS } from "../support/databases.js";
import { addComment, admin, commentsServers, postComment, solvedBody } from "./support.js";

/** The forms the Akismet receiver got, and what it answers: spam when the content says "casino". */
const forms: URLSearchParams[] = [];
let akismet: Server;
let akismetUrl: string;

beforeAll(async () => {
  akismet = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString("utf8");
    });
    request.on("end", () => {
      const form = new URLSearchParams(body);
      forms.push(form);
      const content = form.get("comment_content") ?? "";
      response.setHeader("content-type", "text/plain");
      if (content.includes("broken")) {
        response.statusCode = 500;
        response.end("oops");
      } else response.end(content.includes("casino") ? "true" : "false");
    });
  });
  await new Promise<void>((resolve) => akismet.listen(0, "127.0.0.1", resolve));
  akismetUrl = `http://127.0.0.1:${(akismet.address() as AddressInfo).port}/1.1/comment-check`;
});
afterAll(() => new Promise<void>((resolve) => akismet.close(() => resolve())));

const WEBSITES = [
  { name: "strict", "allowed-origins": ["*"] },
  { name: "known", moderation: "first" },
  { name: "open", moderation: "none" },
  { name: "legacy", "auto-approve": true },
];

async function newest(app: FastifyInstance, website: string): Promise<Record<string, unknown>> {
  const [comment] = (await admin(app, "GET", `/api/admin/comment/${website}?limit=1`)).json();
  return comment;
}

describe.each(DATABASE_KINDS)("moderation modes and spam on $kind", ({ kind, skip }) => {
  const servers = commentsServers(kind, skip);
  const base = { "rate-limit": { comments: 1000, per: "10m" }, websites: WEBSITES };

  it.skipIf(skip)("approves per mode: all holds, none and auto-approve approve, first knows authors", async () => {
    const { app } = await servers.start(base);
    const approvedAfter = async (website: string, fields: Record<string, unknown> = {}) => {
      expect((await addComment(app, website, "post", fields)).statusCode).toBe(201);
      return (await newest(app, website)).approved;
    };
    expect(await approvedAfter("strict")).toBe(false);
    expect(await approvedAfter("open")).toBe(true);
    expect(await approvedAfter("legacy")).toBe(true);

    const ann = { author: "Ann & Co", email: "ann@example.org" };
    expect(await approvedAfter("known", ann)).toBe(false);
    const first = (await newest(app, "known")).id;
    expect((await admin(app, "POST", `/api/admin/comment/known/post/${first}`)).statusCode).toBe(200);
    expect(await approvedAfter("known", { ...ann, email: "ANN@example.org" })).toBe(true);
    expect(await approvedAfter("known", { ...ann, email: "other@example.org" })).toBe(false);
    expect(await approvedAfter("known", { author: "Bob", email: "ann@example.org" })).toBe(false);
    expect(await approvedAfter("known", { author: "Ann & Co" })).toBe(false);
  });

  it.skipIf(skip)("holds a comment with more than max-links links, even under none", async () => {
    const { app } = await servers.start({ ...base, spam: { "max-links": 2 } });
    const post = async (content: string) => {
      expect((await addComment(app, "open", "post", { content })).statusCode).toBe(201);
      return (await newest(app, "open")).approved;
    };
    expect(await post("see http://a.example and www.b.example")).toBe(true);
    expect(await post("see http://a.example, https://b.example and www.c.example")).toBe(false);
    const metrics = (await app.inject({ url: "/metrics" })).body;
    expect(metrics).toContain('comments_spam_total{signal="links"} 1');
  });

  it.skipIf(skip)("drops a honeypot comment behind a 201 and logs a spam event", async () => {
    const { app } = await servers.start(base);
    const response = await addComment(app, "open", "honeypot", { homepage: "http://spam.example" });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toEqual({ message: "Comment added" });
    expect((await admin(app, "GET", "/api/admin/comment/open/honeypot")).json()).toEqual([]);
    const events = (await admin(app, "GET", "/api/admin/event/open")).json() as Array<{ article: string }>;
    expect(events.filter((event) => event.article === "honeypot")).toMatchObject([
      { type: "spam", article: "honeypot", message: "Spam refused on article honeypot (honeypot)" },
    ]);
    // Its challenge is spent: a replay is refused as for any comment, and logs nothing more.
    const body = await solvedBody(app, "open", "honeypot", { homepage: "x" });
    expect((await postComment(app, "open", "honeypot", body)).statusCode).toBe(201);
    expect((await postComment(app, "open", "honeypot", body)).json()).toEqual({
      error: "The challenge has already been used",
    });
    expect(((await admin(app, "GET", "/api/admin/event/open")).json() as unknown[]).length).toBe(events.length + 1);
    // An empty honeypot is what people send.
    expect((await addComment(app, "open", "honeypot", { homepage: "" })).statusCode).toBe(201);
    expect((await admin(app, "GET", "/api/admin/comment/open/honeypot")).json()).toHaveLength(1);
    expect((await app.inject({ url: "/metrics" })).body).toContain('comments_spam_total{signal="honeypot"} 2');
  });

  it.skipIf(skip)("keeps honeypot comments when the honeypot is off", async () => {
    const { app } = await servers.start({ ...base, spam: { honeypot: false } });
    expect((await addComment(app, "open", "honeypot-off", { homepage: "x" })).statusCode).toBe(201);
    expect((await admin(app, "GET", "/api/admin/comment/open/honeypot-off")).json()).toHaveLength(1);
  });

  it.skipIf(skip)("refuses a challenge answered sooner than min-answer-time, keeping it usable", async () => {
    const { app } = await servers.start({ ...base, spam: { "min-answer-time": "1h" } });
    const body = await solvedBody(app, "open", "post");
    const response = await postComment(app, "open", "post", body);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: "too fast, please retry" });
    // An older challenge (signed as the server signs) passes.
    const { app: other } = await servers.start(base);
    expect((await postComment(other, "open", "post", body)).statusCode).toBe(201);
  });

  it.skipIf(skip)("asks the Akismet-compatible service and holds its spam apart", async () => {
    const { app } = await servers.start({ ...base, akismet: { key: "akismet-key", url: akismetUrl } });
    forms.length = 0;
    const ham = await addComment(app, "open", "post", { content: "Thanks!", "author-website": "ann.example" }, {});
    expect(ham.statusCode).toBe(201);
    expect(await newest(app, "open")).toMatchObject({ approved: true });
    expect(await newest(app, "open")).not.toHaveProperty("spam");
    const form = forms[0];
    expect(form?.get("api_key")).toBe("akismet-key");
    expect(form?.get("comment_content")).toBe("Thanks!");
    expect(form?.get("comment_author")).toBe("Ann");
    expect(form?.get("comment_author_url")).toBe("ann.example");
    expect(form?.get("comment_type")).toBe("comment");
    expect(form?.get("user_ip")).toBe("127.0.0.1");
    expect(form?.get("blog")).toBeTruthy();
    expect(form?.has("comment_author_email")).toBe(false);

    expect(
      (await addComment(app, "open", "post", { content: "cheap casino", email: "x@example.org" })).statusCode,
    ).toBe(201);
    const spam = await newest(app, "open");
    expect(spam).toMatchObject({ approved: false, spam: true });
    expect(forms[1]?.has("comment_author_email")).toBe(false);
    expect((await admin(app, "GET", `/api/admin/comment/open/post/${spam.id}`)).json()).toMatchObject({ spam: true });
    expect((await app.inject({ url: "/api/v1/comment/open/post" })).body).not.toContain("spam");
    // Approving clears the flag.
    await admin(app, "POST", `/api/admin/comment/open/post/${spam.id}`);
    expect(await newest(app, "open")).toMatchObject({ approved: true });
    expect(await newest(app, "open")).not.toHaveProperty("spam");

    // A replayed challenge is refused before the service is asked again.
    const asked = forms.length;
    const body = await solvedBody(app, "open", "post", { content: "once" });
    expect((await postComment(app, "open", "post", body)).statusCode).toBe(201);
    expect((await postComment(app, "open", "post", body)).json()).toEqual({
      error: "The challenge has already been used",
    });
    expect(forms.length).toBe(asked + 1);

    // A service that cannot answer leaves the comment to the moderation mode.
    expect((await addComment(app, "open", "post", { content: "broken service" })).statusCode).toBe(201);
    expect(await newest(app, "open")).toMatchObject({ approved: true });
    expect((await app.inject({ url: "/metrics" })).body).toContain('comments_spam_total{signal="akismet"} 1');
  });

  it.skipIf(skip)("answers the rate limit before asking the Akismet-compatible service", async () => {
    const { app } = await servers.start({
      ...base,
      "rate-limit": { comments: 1, per: "10m" },
      // A website of its own: the other tests' comments count in the same database.
      websites: [...WEBSITES, { name: "limited", moderation: "none" }],
      akismet: { key: "akismet-key", url: akismetUrl },
    });
    forms.length = 0;
    expect((await addComment(app, "limited", "post", { content: "first" })).statusCode).toBe(201);
    expect(forms.length).toBe(1);
    const refused = await addComment(app, "limited", "post", { content: "second" });
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({
      error: expect.stringMatching(/^too many comments from this address; retry in \d+ s$/),
    });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(forms.length).toBe(1);
    expect((await app.inject({ url: "/metrics" })).body).toMatch(
      /comments_rejected_total\{[^}]*website="limited"[^}]*reason="rate_limit"[^}]*\} 1/,
    );
  });
});
