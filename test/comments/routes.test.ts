import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { challengeSignature } from "../../src/comments/challenge.js";
import { DATABASE_KINDS } from "../support/databases.js";
import {
  ADMIN_TOKEN,
  addComment,
  admin,
  CHALLENGE_SECRET,
  commentsServers,
  fetchChallenge,
  postComment,
  type StartArguments,
  solvedBody,
} from "./support.js";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe.each(DATABASE_KINDS)("comments API on $kind", ({ kind, skip }) => {
  const servers = commentsServers(kind, skip);
  const start = async (...args: StartArguments) => (await servers.start(...args)).app;

  it.skipIf(skip)("runs the whole flow: challenge, post, moderate, list, events", async () => {
    const app = await start();
    const challenge = await fetchChallenge(app, "flow", "first-post");
    expect(Object.keys(challenge).sort()).toEqual(["question", "signature", "timestamp"]);
    expect(challenge.question).toMatch(/^what is the result of: \d+ [-+*] \d+$/);
    expect(challenge.signature).toMatch(/^[0-9a-f]{64}$/);
    expect(Math.abs(challenge.timestamp - Date.now())).toBeLessThan(5_000);

    const before = Date.now();
    const posted = await addComment(app, "flow", "first-post", {
      author: `  <b>Ann</b> & "co" `,
      content: "I <3 it's 'quoted' & fine",
      "author-website": "https://ann.example.org",
      challenge: "ignored unknown field",
    });
    expect(posted.statusCode).toBe(201);
    expect(posted.json()).toEqual({ message: "Comment added" });
    const after = Date.now();

    // Not approved yet: the public list is empty, the admin list has it.
    const empty = await app.inject({ method: "GET", url: "/api/v1/comment/flow/first-post" });
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual([]);
    const pending = await admin(app, "GET", "/api/admin/comment/flow/first-post");
    expect(pending.statusCode).toBe(200);
    const [comment] = pending.json();
    expect(Object.keys(comment)).toEqual(["id", "content", "author", "author-website", "approved", "timestamp"]);
    expect(comment).toEqual({
      id: expect.stringMatching(UUID_V4),
      content: "I &lt;3 it&#39;s &#39;quoted&#39; &amp; fine",
      author: "&lt;b&gt;Ann&lt;/b&gt; &amp; &quot;co&quot;",
      "author-website": "https://ann.example.org",
      approved: false,
      timestamp: expect.any(Number),
    });
    expect(comment.timestamp).toBeGreaterThanOrEqual(before);
    expect(comment.timestamp).toBeLessThanOrEqual(after);

    const approved = await admin(app, "POST", `/api/admin/comment/flow/first-post/${comment.id}`);
    expect(approved.statusCode).toBe(200);
    expect(approved.json()).toEqual({ message: "Comment approved" });
    const listed = await app.inject({ method: "GET", url: "/api/v1/comment/flow/first-post" });
    expect(listed.json()).toEqual([{ ...comment, approved: true }]);

    const events = await admin(app, "GET", "/api/admin/event/flow");
    expect(events.statusCode).toBe(200);
    const [event] = events.json();
    expect(Object.keys(event)).toEqual(["id", "timestamp", "article", "comment-id", "type", "message"]);
    expect(event).toEqual({
      id: expect.stringMatching(UUID_V4),
      timestamp: comment.timestamp,
      article: "first-post",
      "comment-id": comment.id,
      type: "new-comment",
      message: `New comment ${comment.id} on article first-post`,
    });
    const cleared = await admin(app, "DELETE", "/api/admin/event/flow");
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json()).toEqual([event]);
    expect((await admin(app, "GET", "/api/admin/event/flow")).json()).toEqual([]);
    expect((await admin(app, "DELETE", "/api/admin/event/flow")).json()).toEqual([]);
    // Clearing the log leaves the comments alone.
    expect((await app.inject({ method: "GET", url: "/api/v1/comment/flow/first-post" })).json()).toHaveLength(1);
  });

  it.skipIf(skip)("leaves author-website out when not given, and lists oldest first", async () => {
    const app = await start({ websites: [{ name: "auto", "auto-approve": true }] });
    for (const author of ["first", "second", "third"]) {
      expect((await addComment(app, "auto", "list", { author })).statusCode).toBe(201);
      await new Promise((wait) => setTimeout(wait, 2));
    }
    const listed = (await app.inject({ method: "GET", url: "/api/v1/comment/auto/list" })).json();
    expect(listed.map((comment: { author: string }) => comment.author)).toEqual(["first", "second", "third"]);
    for (const comment of listed) {
      expect(comment).not.toHaveProperty("author-website");
      expect(comment.approved).toBe(true);
    }
    const timestamps = listed.map((comment: { timestamp: number }) => comment.timestamp);
    expect([...timestamps].sort((a, b) => a - b)).toEqual(timestamps);
    expect((await app.inject({ method: "GET", url: "/api/v1/comment/auto/no-comments-yet" })).json()).toEqual([]);
    // Another article's comments are not listed.
    expect((await app.inject({ method: "GET", url: "/api/v1/comment/auto/list2" })).json()).toEqual([]);
  });

  it.skipIf(skip)("serves every admin route with its messages", async () => {
    const app = await start({ "rate-limit": { comments: 100 } });
    // A few milliseconds apart, so that "oldest first" is the order of posting (ties go by id).
    const pause = () => new Promise((wait) => setTimeout(wait, 2));
    for (let i = 0; i < 3; i++) {
      expect((await addComment(app, "adm", "post", { content: `c${i}` })).statusCode).toBe(201);
      await pause();
    }
    expect((await addComment(app, "adm", "other")).statusCode).toBe(201);
    const all = (await admin(app, "GET", "/api/admin/comment/adm/post")).json();
    expect(all.map((comment: { content: string }) => comment.content)).toEqual(["c0", "c1", "c2"]);
    const [first, second] = all;
    const otherId = (await admin(app, "GET", "/api/admin/comment/adm/other")).json()[0].id;

    const one = await admin(app, "GET", `/api/admin/comment/adm/post/${first.id}`);
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual(first);
    // UUIDs are case-insensitive.
    expect((await admin(app, "GET", `/api/admin/comment/adm/post/${first.id.toUpperCase()}`)).json()).toEqual(first);

    for (let i = 0; i < 2; i++) {
      const approved = await admin(app, "POST", `/api/admin/comment/adm/post/${first.id}`);
      expect(approved.statusCode).toBe(200);
      expect(approved.json()).toEqual({ message: "Comment approved" });
    }
    expect((await admin(app, "GET", `/api/admin/comment/adm/post/${first.id}`)).json().approved).toBe(true);

    const deleted = await admin(app, "DELETE", `/api/admin/comment/adm/post/${second.id}`);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ message: "Comment deleted" });
    for (const method of ["GET", "POST", "DELETE"] as const) {
      const gone = await admin(app, method, `/api/admin/comment/adm/post/${second.id}`);
      expect(gone.statusCode).toBe(404);
      expect(gone.json()).toEqual({ error: `comment ${second.id} not found` });
      // A comment of another article is not found under this one.
      const elsewhere = await admin(app, method, `/api/admin/comment/adm/post/${otherId}`);
      expect(elsewhere.statusCode).toBe(404);
      expect(elsewhere.json()).toEqual({ error: `comment ${otherId} not found` });
      const notUuid = await admin(app, method, "/api/admin/comment/adm/post/not-a-uuid");
      expect(notUuid.statusCode).toBe(404);
      expect(notUuid.json()).toEqual({ error: "comment not-a-uuid not found" });
    }

    const wiped = await admin(app, "DELETE", "/api/admin/comment/adm/post");
    expect(wiped.statusCode).toBe(200);
    expect(wiped.json()).toEqual({ message: "Comments deleted" });
    expect((await admin(app, "GET", "/api/admin/comment/adm/post")).json()).toEqual([]);
    expect((await admin(app, "DELETE", "/api/admin/comment/adm/post")).json()).toEqual({ message: "Comments deleted" });
    // The other article keeps its comment; the event log keeps every event.
    expect((await admin(app, "GET", "/api/admin/comment/adm/other")).json()).toHaveLength(1);
    const events = (await admin(app, "GET", "/api/admin/event/adm")).json();
    expect(events.map((event: { article: string }) => event.article)).toEqual(["post", "post", "post", "other"]);
  });

  it.skipIf(skip)("guards every admin route: 401 missing or invalid token, registry admins accepted", async () => {
    const app = await start({ websites: [{ name: "blog" }] });
    const id = "6f1c7a8e-1234-4abc-8def-0123456789ab";
    const routes = [
      ["GET", "/api/admin/comment/blog/post"],
      ["DELETE", "/api/admin/comment/blog/post"],
      ["GET", `/api/admin/comment/blog/post/${id}`],
      ["POST", `/api/admin/comment/blog/post/${id}`],
      ["DELETE", `/api/admin/comment/blog/post/${id}`],
      ["GET", "/api/admin/event/blog"],
      ["DELETE", "/api/admin/event/blog"],
    ] as const;
    for (const [method, url] of routes) {
      const missing = await admin(app, method, url, null);
      expect([missing.statusCode, missing.json()]).toEqual([401, { error: "missing token" }]);
      const wrong = await admin(app, method, url, "Bearer wrong");
      expect([wrong.statusCode, wrong.json()]).toEqual([401, { error: "invalid token" }]);
      // Auth comes first: strangers learn nothing about websites.
      const unknown = await admin(app, method, url.replace("/blog", "/shop"), "nope");
      expect([unknown.statusCode, unknown.json()]).toEqual([401, { error: "invalid token" }]);
      for (const token of [ADMIN_TOKEN, `Bearer ${ADMIN_TOKEN}`, "registry-admin", "Bearer registry-admin"]) {
        expect((await admin(app, method, url, token)).statusCode).not.toBe(401);
      }
      const tech = await admin(app, method, url, "registry-tech");
      expect([tech.statusCode, tech.json()]).toEqual([403, { error: "forbidden" }]);
    }
  });

  it.skipIf(skip)("answers 404 for unknown websites and articles on every route", async () => {
    const app = await start({
      websites: [{ name: "blog" }, { name: "docs", articles: ["intro"] }],
    });
    const id = "6f1c7a8e-1234-4abc-8def-0123456789ab";
    const check = async (method: "GET" | "POST" | "DELETE" | "OPTIONS", url: string, error: string, auth = false) => {
      const response = await app.inject({
        method,
        url,
        headers: auth ? { authorization: ADMIN_TOKEN } : {},
        ...(method === "POST" && !auth ? { payload: await solvedBody(app, "blog", "post") } : {}),
      });
      expect([method, url, response.statusCode, response.json()]).toEqual([method, url, 404, { error }]);
    };
    for (const [website, article, error] of [
      ["shop", "post", "website shop not found"],
      ["Blog", "post", "website Blog not found"],
      ["b~g", "post", "website b~g not found"],
      ["docs", "other", "article other not found"],
      ["blog", "bad%20name", "article bad name not found"],
    ] as const) {
      await check("GET", `/api/v1/challenge/${website}/${article}`, error);
      await check("OPTIONS", `/api/v1/challenge/${website}/${article}`, error);
      await check("GET", `/api/v1/comment/${website}/${article}`, error);
      await check("POST", `/api/v1/comment/${website}/${article}`, error);
      await check("OPTIONS", `/api/v1/comment/${website}/${article}`, error);
      await check("GET", `/api/admin/comment/${website}/${article}`, error, true);
      await check("DELETE", `/api/admin/comment/${website}/${article}`, error, true);
      for (const method of ["GET", "POST", "DELETE"] as const) {
        await check(method, `/api/admin/comment/${website}/${article}/${id}`, error, true);
      }
    }
    for (const website of ["shop", "b~g"]) {
      await check("GET", `/api/admin/event/${website}`, `website ${website} not found`, true);
      await check("DELETE", `/api/admin/event/${website}`, `website ${website} not found`, true);
    }
    // The allow-listed article works.
    expect((await app.inject({ method: "GET", url: "/api/v1/comment/docs/intro" })).statusCode).toBe(200);
  });

  it.skipIf(skip)("accepts article names of up to 200 characters and refuses longer ones with 404", async () => {
    const app = await start();
    const long = "x".repeat(200);
    for (const url of [`/api/v1/challenge/open/${long}`, `/api/v1/comment/open/${long}`]) {
      expect((await app.inject({ method: "GET", url })).statusCode).toBe(200);
    }
    expect((await addComment(app, "open", long)).statusCode).toBe(201);
    const tooLong = await app.inject({ method: "GET", url: `/api/v1/comment/open/${long}x` });
    expect([tooLong.statusCode, tooLong.json()]).toEqual([404, { error: `article ${long}x not found` }]);
  });

  it.skipIf(skip)("refuses names that break the name rules in open mode", async () => {
    const app = await start();
    for (const [url, error] of [
      [`/api/v1/comment/${"w".repeat(65)}/post`, `website ${"w".repeat(65)} not found`],
      ["/api/v1/comment/blog%3F/post", "website blog? not found"],
      ["/api/v1/challenge/blog/a%2Fb", "article a/b not found"],
      ["/api/admin/event/bl%20og", "website bl og not found"],
    ]) {
      const response = await app.inject({ method: "GET", url, headers: { authorization: ADMIN_TOKEN } });
      expect([response.statusCode, response.json()]).toEqual([404, { error }]);
    }
    expect((await app.inject({ method: "GET", url: `/api/v1/comment/${"w".repeat(64)}/post~1` })).statusCode).toBe(200);
  });

  it.skipIf(skip)("checks the body first, then the website, then the challenge", async () => {
    const app = await start({ websites: [{ name: "blog" }] });
    const body = await solvedBody(app, "blog", "post");
    // Body first: a bad field on an unknown website is a 400.
    const bad = await postComment(app, "shop", "post", { ...body, author: "" });
    expect([bad.statusCode, bad.json()]).toEqual([
      400,
      { error: "field author: must be a non-empty string of at most 100 characters" },
    ]);
    const notObject = await app.inject({
      method: "POST",
      url: "/api/v1/comment/blog/post",
      headers: { "content-type": "application/json" },
      payload: "[1, 2]",
    });
    expect([notObject.statusCode, notObject.json()]).toEqual([400, { error: "request body must be a JSON object" }]);
    // Then the website: a valid body on an unknown website is a 404.
    const unknown = await postComment(app, "shop", "post", body);
    expect([unknown.statusCode, unknown.json()]).toEqual([404, { error: "website shop not found" }]);
    // Then the challenge.
    const wrong = await postComment(app, "blog", "post", { ...body, answer: "-1000" });
    expect([wrong.statusCode, wrong.json()]).toEqual([400, { error: "Bad challenge response" }]);
    const otherArticle = await postComment(app, "blog", "another-post", body);
    expect([otherArticle.statusCode, otherArticle.json()]).toEqual([400, { error: "Bad challenge response" }]);
    // A string of digits is a timestamp too; a wrong answer did not use the challenge.
    const ok = await postComment(app, "blog", "post", { ...body, timestamp: String(body.timestamp) });
    expect(ok.statusCode).toBe(201);
  });

  it.skipIf(skip)("refuses a challenge of blog/my-post on blog-my/post: the signed parts stay apart", async () => {
    const app = await start();
    const body = await solvedBody(app, "blog", "my-post");
    const elsewhere = await postComment(app, "blog-my", "post", body);
    expect([elsewhere.statusCode, elsewhere.json()]).toEqual([400, { error: "Bad challenge response" }]);
    expect((await postComment(app, "blog", "my-post", body)).statusCode).toBe(201);
    // The server verifies the HMAC of the JSON array (docs/comments.md): signed for blog-my/post, a
    // challenge is refused on blog/my-post and accepted on blog-my/post.
    const timestamp = Date.now();
    const signature = createHmac("sha256", CHALLENGE_SECRET)
      .update(JSON.stringify([timestamp, "3", "blog-my", "post"]))
      .digest("hex");
    const signed = { author: "Bob", content: "Hi", answer: "3", timestamp, signature };
    const wrongPlace = await postComment(app, "blog", "my-post", signed);
    expect([wrongPlace.statusCode, wrongPlace.json()]).toEqual([400, { error: "Bad challenge response" }]);
    expect((await postComment(app, "blog-my", "post", signed)).statusCode).toBe(201);
  });

  it.skipIf(skip)("refuses expired and future challenges", async () => {
    const app = await start({ challenge: { ttl: "1m" } });
    const sign = (timestamp: number) => challengeSignature(CHALLENGE_SECRET, timestamp, "7", "time", "post");
    const at = (timestamp: number) => ({
      author: "A",
      content: "C",
      answer: "7",
      timestamp,
      signature: sign(timestamp),
    });
    const old = Date.now() - 61_000;
    const expired = await postComment(app, "time", "post", at(old));
    expect([expired.statusCode, expired.json()]).toEqual([400, { error: "The challenge has expired" }]);
    const future = Date.now() + 120_000;
    const ahead = await postComment(app, "time", "post", at(future));
    expect([ahead.statusCode, ahead.json()]).toEqual([400, { error: "Bad challenge response" }]);
    const fresh = Date.now() - 30_000;
    expect((await postComment(app, "time", "post", at(fresh))).statusCode).toBe(201);
  });

  it.skipIf(skip)("refuses a replayed challenge, whatever the spelling of its signature", async () => {
    const app = await start();
    const body = await solvedBody(app, "replay", "post");
    expect((await postComment(app, "replay", "post", body)).statusCode).toBe(201);
    for (const signature of [body.signature, (body.signature as string).toUpperCase()]) {
      const again = await postComment(app, "replay", "post", { ...body, signature, content: "again" });
      expect([again.statusCode, again.json()]).toEqual([400, { error: "The challenge has already been used" }]);
    }
    // Only the first one was stored.
    expect((await admin(app, "GET", "/api/admin/comment/replay/post")).json()).toHaveLength(1);
  });

  it.skipIf(skip)("rate-limits accepted comments per client address and website with Retry-After", async () => {
    const app = await start({ "rate-limit": { comments: 2, per: "10m" } });
    const ann = { remoteAddress: "10.0.0.1" };
    const firstBody = await solvedBody(app, "rl", "post");
    expect((await postComment(app, "rl", "post", firstBody, ann)).statusCode).toBe(201);
    // A rejected challenge does not count.
    const wrong = await postComment(app, "rl", "post", { ...(await solvedBody(app, "rl", "post")), answer: "x" }, ann);
    expect(wrong.statusCode).toBe(400);
    expect((await addComment(app, "rl", "post", {}, ann)).statusCode).toBe(201);

    const body = await solvedBody(app, "rl", "post");
    const limited = await postComment(app, "rl", "post", body, ann);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({
      error: expect.stringMatching(/^too many comments from this address; retry in \d+ s$/),
    });
    const retryAfter = Number(limited.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThan(590);
    expect(retryAfter).toBeLessThanOrEqual(600);
    // Checks before the rate limit still answer first: fields, website, then the whole challenge.
    const invalid = await postComment(app, "rl", "post", { ...body, content: "" }, ann);
    expect(invalid.statusCode).toBe(400);
    const wrongWhileLimited = await postComment(app, "rl", "post", { ...body, answer: "x" }, ann);
    expect([wrongWhileLimited.statusCode, wrongWhileLimited.json()]).toEqual([
      400,
      { error: "Bad challenge response" },
    ]);
    const replayWhileLimited = await postComment(app, "rl", "post", firstBody, ann);
    expect([replayWhileLimited.statusCode, replayWhileLimited.json()]).toEqual([
      400,
      { error: "The challenge has already been used" },
    ]);
    // Another address, or another website, has its own allowance; the refused challenge is still usable.
    expect((await postComment(app, "rl", "post", body, { remoteAddress: "10.0.0.2" })).statusCode).toBe(201);
    expect((await addComment(app, "rl-other", "post", {}, ann)).statusCode).toBe(201);
    expect((await admin(app, "GET", "/api/admin/comment/rl/post")).json()).toHaveLength(3);
  });

  it.skipIf(skip)("keeps the rate limit and used challenges in the database across a restart", async () => {
    let app = await start({ "rate-limit": { comments: 1, per: "10m" } });
    const ann = { remoteAddress: "10.0.0.7" };
    const body = await solvedBody(app, "rl-restart", "post");
    expect((await postComment(app, "rl-restart", "post", body, ann)).statusCode).toBe(201);
    const pending = await solvedBody(app, "rl-restart", "post");
    await servers.current().close();

    app = await start({ "rate-limit": { comments: 1, per: "10m" } });
    const limited = await postComment(app, "rl-restart", "post", pending, ann);
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(590);
    const replayed = await postComment(app, "rl-restart", "post", body, { remoteAddress: "10.0.0.8" });
    expect([replayed.statusCode, replayed.json()]).toEqual([400, { error: "The challenge has already been used" }]);
    expect((await postComment(app, "rl-restart", "post", pending, { remoteAddress: "10.0.0.8" })).statusCode).toBe(201);
  });

  it.skipIf(skip)("counts X-Forwarded-For only with http.trust-proxy", async () => {
    const forwarded = (address: string) => ({ headers: { "x-forwarded-for": address }, remoteAddress: "10.9.9.9" });
    let app = await start({ "rate-limit": { comments: 1 } });
    expect(
      (await postComment(app, "xff1", "p", await solvedBody(app, "xff1", "p"), forwarded("1.1.1.1"))).statusCode,
    ).toBe(201);
    expect(
      (await postComment(app, "xff1", "p", await solvedBody(app, "xff1", "p"), forwarded("2.2.2.2"))).statusCode,
    ).toBe(429);
    await servers.current().close();
    app = await start({ "rate-limit": { comments: 1 } }, { config: { http: { "trust-proxy": true } } });
    expect(
      (await postComment(app, "xff2", "p", await solvedBody(app, "xff2", "p"), forwarded("1.1.1.1"))).statusCode,
    ).toBe(201);
    expect(
      (await postComment(app, "xff2", "p", await solvedBody(app, "xff2", "p"), forwarded("2.2.2.2"))).statusCode,
    ).toBe(201);
    expect(
      (await postComment(app, "xff2", "p", await solvedBody(app, "xff2", "p"), forwarded("1.1.1.1"))).statusCode,
    ).toBe(429);
  });

  it.skipIf(skip)("answers CORS requests for allowed origins on the public routes only", async () => {
    const app = await start({
      websites: [{ name: "cors", "allowed-origins": ["https://blog.example.org"] }, { name: "cors-closed" }],
      "rate-limit": { comments: 1 },
    });
    const allowed = { origin: "https://blog.example.org" };
    const evil = { origin: "https://evil.example.org" };

    for (const url of ["/api/v1/challenge/cors/post", "/api/v1/comment/cors/post"]) {
      const ok = await app.inject({ method: "GET", url, headers: allowed });
      expect(ok.statusCode).toBe(200);
      expect(ok.headers["access-control-allow-origin"]).toBe("https://blog.example.org");
      expect(ok.headers.vary).toMatch(/Origin/);
      const refused = await app.inject({ method: "GET", url, headers: evil });
      expect(refused.statusCode).toBe(200);
      expect(refused.headers["access-control-allow-origin"]).toBeUndefined();
      expect(refused.headers.vary).toMatch(/Origin/);

      const preflight = await app.inject({
        method: "OPTIONS",
        url,
        headers: {
          ...allowed,
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type",
        },
      });
      expect(preflight.statusCode).toBe(204);
      expect(preflight.headers["access-control-allow-origin"]).toBe("https://blog.example.org");
      expect(preflight.headers["access-control-allow-methods"]).toBe("GET, POST");
      expect(preflight.headers["access-control-allow-headers"]).toBe("Content-Type");
      expect(preflight.headers["access-control-max-age"]).toBe("3600");
      expect(preflight.body).toBe("");

      const preflightEvil = await app.inject({
        method: "OPTIONS",
        url,
        headers: { ...evil, "access-control-request-method": "POST" },
      });
      expect(preflightEvil.statusCode).toBe(403);
      expect(preflightEvil.json()).toEqual({
        error: "origin https://evil.example.org is not allowed for website cors",
      });
      expect(preflightEvil.headers["access-control-allow-origin"]).toBeUndefined();
      expect(preflightEvil.headers["access-control-allow-methods"]).toBeUndefined();

      const closed = await app.inject({ method: "OPTIONS", url: url.replace("cors", "cors-closed"), headers: allowed });
      expect(closed.statusCode).toBe(403);

      const plain = await app.inject({ method: "OPTIONS", url });
      expect(plain.statusCode).toBe(204);
      expect(plain.headers.allow).toMatch(/GET/);
      expect(plain.headers["access-control-allow-origin"]).toBeUndefined();
    }

    // Posts and their errors carry the header so that the page can read the answer.
    const posted = await postComment(app, "cors", "post", await solvedBody(app, "cors", "post"), { headers: allowed });
    expect(posted.statusCode).toBe(201);
    expect(posted.headers["access-control-allow-origin"]).toBe("https://blog.example.org");
    const limited = await postComment(app, "cors", "post", await solvedBody(app, "cors", "post"), { headers: allowed });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers["access-control-allow-origin"]).toBe("https://blog.example.org");
    expect(limited.headers["access-control-expose-headers"]).toBe("Retry-After");
    const invalid = await postComment(app, "cors", "post", {}, { headers: allowed });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.headers["access-control-allow-origin"]).toBe("https://blog.example.org");

    // Admin routes send no CORS headers and have no pre-flight.
    const adminList = await app.inject({
      method: "GET",
      url: "/api/admin/comment/cors/post",
      headers: { ...allowed, authorization: ADMIN_TOKEN },
    });
    expect(adminList.statusCode).toBe(200);
    expect(Object.keys(adminList.headers).filter((name) => name.startsWith("access-control-"))).toEqual([]);
    const adminPreflight = await app.inject({
      method: "OPTIONS",
      url: "/api/admin/comment/cors/post",
      headers: allowed,
    });
    expect(adminPreflight.statusCode).toBe(405);
    expect(adminPreflight.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it.skipIf(skip)("answers any origin in open mode", async () => {
    const app = await start();
    const origin = "https://anything.example.net";
    const listed = await app.inject({ method: "GET", url: "/api/v1/comment/open/post", headers: { origin } });
    expect(listed.headers["access-control-allow-origin"]).toBe(origin);
    const preflight = await app.inject({ method: "OPTIONS", url: "/api/v1/comment/open/post", headers: { origin } });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers["access-control-allow-origin"]).toBe(origin);
  });

  it.skipIf(skip)("refuses bodies over 64 KiB, that are not JSON, or of another media type", async () => {
    const app = await start();
    const body = await solvedBody(app, "limits", "post", { content: "x".repeat(70 * 1024) });
    const large = await postComment(app, "limits", "post", body);
    expect([large.statusCode, large.json()]).toEqual([
      413,
      { error: "request body is larger than the limit of 65536 bytes" },
    ]);
    const notJson = await app.inject({
      method: "POST",
      url: "/api/v1/comment/limits/post",
      headers: { "content-type": "application/json" },
      payload: "{nope",
    });
    expect([notJson.statusCode, notJson.json()]).toEqual([400, { error: "request body is not valid JSON" }]);
    const text = await app.inject({
      method: "POST",
      url: "/api/v1/comment/limits/post",
      headers: { "content-type": "text/plain" },
      payload: "hello",
    });
    expect(text.statusCode).toBe(415);
    const withCharset = await app.inject({
      method: "POST",
      url: "/api/v1/comment/limits/post",
      headers: { "content-type": "application/json; charset=utf-8" },
      payload: JSON.stringify(await solvedBody(app, "limits", "post", { content: "x".repeat(10_000) })),
    });
    expect(withCharset.statusCode).toBe(201);
  });

  it.skipIf(skip)("serves no route when disabled", async () => {
    const app = await start({ enabled: false });
    for (const [method, url] of [
      ["GET", "/api/v1/challenge/blog/post"],
      ["GET", "/api/v1/comment/blog/post"],
      ["POST", "/api/v1/comment/blog/post"],
      ["GET", "/api/admin/event/blog"],
    ] as const) {
      const response = await admin(app, method, url);
      expect([response.statusCode, response.json()]).toEqual([404, { error: `route ${method} ${url} not found` }]);
    }
  });

  it.skipIf(skip)("issues questions of the configured list", async () => {
    const app = await start({
      challenge: { type: "questions", questions: [{ question: "What colour is the sky?", answer: "Blue" }] },
    });
    const challenge = await fetchChallenge(app, "quiz", "post");
    expect(challenge.question).toBe("What colour is the sky?");
    const body = { author: "A", content: "C", timestamp: challenge.timestamp, signature: challenge.signature };
    expect((await postComment(app, "quiz", "post", { ...body, answer: "green" })).statusCode).toBe(400);
    expect((await postComment(app, "quiz", "post", { ...body, answer: "  BLUE " })).statusCode).toBe(201);
  });

  it.skipIf(skip)("counts added, rejected and issued in its metrics", async () => {
    const app = await start({ websites: [{ name: "m1" }], "rate-limit": { comments: 1 } });
    const accepted = await solvedBody(app, "m1", "p");
    expect((await postComment(app, "m1", "p", accepted)).statusCode).toBe(201);
    expect((await addComment(app, "m1", "p")).statusCode).toBe(429);
    expect((await postComment(app, "m1", "p", { author: "" })).statusCode).toBe(400);
    const notJson = await app.inject({
      method: "POST",
      url: "/api/v1/comment/m1/p",
      headers: { "content-type": "application/json" },
      payload: "{nope",
    });
    expect(notJson.statusCode).toBe(400);
    // A replayed and an expired challenge are challenge rejections too.
    expect((await postComment(app, "m1", "p", accepted)).statusCode).toBe(400);
    const old = Date.now() - 11 * 60_000;
    const expired = await postComment(app, "m1", "p", {
      ...accepted,
      timestamp: old,
      signature: challengeSignature(CHALLENGE_SECRET, old, "1", "m1", "p"),
      answer: "1",
    });
    expect([expired.statusCode, expired.json()]).toEqual([400, { error: "The challenge has expired" }]);
    const tooLarge = await postComment(app, "m1", "p", { content: "x".repeat(70_000) });
    expect(tooLarge.statusCode).toBe(413);
    const wrong = await postComment(app, "m1", "p", { ...(await solvedBody(app, "m1", "p")), answer: "x" });
    expect(wrong.statusCode).toBe(400);
    // Unknown websites are not labels.
    expect((await postComment(app, "nope", "p", {})).statusCode).toBe(400);
    expect((await app.inject({ method: "GET", url: "/api/v1/challenge/nope/p" })).statusCode).toBe(404);
    const metrics = (await app.inject({ method: "GET", url: "/metrics" })).body;
    expect(metrics).toContain('comments_added_total{website="m1"} 1');
    expect(metrics).toContain('comments_rejected_total{website="m1",reason="rate_limit"} 1');
    expect(metrics).toContain('comments_rejected_total{website="m1",reason="invalid"} 3');
    expect(metrics).toContain('comments_rejected_total{website="m1",reason="challenge"} 3');
    expect(metrics).toContain('challenges_issued_total{website="m1"} 3');
    expect(metrics).not.toContain('website="nope"');
    expect(metrics).toContain(
      'http_requests_total{method="POST",route="/api/v1/comment/:website/:article",status="201"} 1',
    );
  });
});
