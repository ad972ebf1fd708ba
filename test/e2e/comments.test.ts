import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

/** The answer of a math question `what is the result of: a op b`. */
function solve(question: string): string {
  const match = /^what is the result of: (\d+) ([-+*]) (\d+)$/.exec(question);
  if (match === null) throw new Error(`not a math question: ${question}`);
  const [left, right] = [Number(match[1]), Number(match[3])];
  return String(match[2] === "+" ? left + right : match[2] === "-" ? left - right : left * right);
}

describe("comments (real process)", () => {
  let vigie: VigieProcess | undefined;
  afterEach(() => {
    vigie?.child.kill("SIGKILL");
    vigie = undefined;
  });

  it("takes a comment from challenge to moderation, and keeps everything across a restart", async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      [
        `http:\n  port: ${port}`,
        "database:\n  url: sqlite:./state/vigie.db",
        'comments:\n  websites:\n    - name: blog\n      allowed-origins: ["https://blog.example.org"]',
        "",
      ].join("\n"),
    );
    vigie = await startVigie({ configFile, port, cwd: directory });
    const base = vigie.baseUrl;

    // The generated admin token is in the data directory, readable by its owner only; the log
    // says where, never what.
    const tokenFile = join(directory, "state", "comments-admin-token");
    const token = readFileSync(tokenFile, "utf8");
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(vigie.output()).toContain(tokenFile);
    expect(vigie.output()).not.toContain(token);
    const asAdmin = { authorization: `Bearer ${token}` };

    // A visitor's page: fetch a challenge, solve it, post.
    const solved = async (author: string, content: string) => {
      const challenge = (await (await fetch(`${base}/api/v1/challenge/blog/hello-world`)).json()) as {
        question: string;
        signature: string;
        timestamp: number;
      };
      return {
        author,
        content,
        answer: solve(challenge.question),
        signature: challenge.signature,
        timestamp: challenge.timestamp,
      };
    };
    const send = async (body: Record<string, unknown>) => {
      const response = await fetch(`${base}/api/v1/comment/blog/hello-world`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: "https://blog.example.org" },
        body: JSON.stringify(body),
      });
      expect(response.headers.get("access-control-allow-origin")).toBe("https://blog.example.org");
      return response;
    };
    const post = async (author: string, content: string) => send(await solved(author, content));
    const first = await post("Ann", "First <em>comment</em>");
    expect(first.status).toBe(201);
    expect(await first.json()).toEqual({ message: "Comment added" });

    const publicList = async () => (await fetch(`${base}/api/v1/comment/blog/hello-world`)).json();
    expect(await publicList()).toEqual([]);
    const pending = (await (
      await fetch(`${base}/api/admin/comment/blog/hello-world`, { headers: asAdmin })
    ).json()) as Array<{
      id: string;
      timestamp: number;
    }>;
    expect(pending).toHaveLength(1);
    const comment = pending[0] as { id: string; timestamp: number };
    expect(comment).toMatchObject({ author: "Ann", content: "First &lt;em&gt;comment&lt;/em&gt;", approved: false });

    const approve = await fetch(`${base}/api/admin/comment/blog/hello-world/${comment.id}`, {
      method: "POST",
      headers: asAdmin,
    });
    expect(approve.status).toBe(200);
    expect(await approve.json()).toEqual({ message: "Comment approved" });
    expect(await publicList()).toEqual([{ ...comment, approved: true }]);

    // The list carries a strong ETag; a browser revalidating it gets 304 without body, with the
    // CORS headers it needs to use its stored copy.
    const listed = await fetch(`${base}/api/v1/comment/blog/hello-world`, {
      headers: { origin: "https://blog.example.org" },
    });
    const etag = listed.headers.get("etag");
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect(listed.headers.get("cache-control")).toBe("no-cache");
    const revalidated = await fetch(`${base}/api/v1/comment/blog/hello-world`, {
      headers: { origin: "https://blog.example.org", "if-none-match": etag as string },
    });
    expect(revalidated.status).toBe(304);
    expect(await revalidated.text()).toBe("");
    expect(revalidated.headers.get("etag")).toBe(etag);
    expect(revalidated.headers.get("access-control-allow-origin")).toBe("https://blog.example.org");
    expect(revalidated.headers.get("vary")).toMatch(/Origin/);

    const events = await (await fetch(`${base}/api/admin/event/blog`, { headers: asAdmin })).json();
    expect(events).toEqual([
      {
        id: expect.any(String),
        timestamp: comment.timestamp,
        article: "hello-world",
        "comment-id": comment.id,
        type: "new-comment",
        message: `New comment ${comment.id} on article hello-world`,
      },
    ]);
    const cleared = await fetch(`${base}/api/admin/event/blog`, { method: "DELETE", headers: asAdmin });
    expect(await cleared.json()).toEqual(events);

    // A second comment stays pending, with its event.
    const second = await solved("Bob", "Second");
    expect((await send(second)).status).toBe(201);
    const before = {
      publicList: await publicList(),
      adminList: await (await fetch(`${base}/api/admin/comment/blog/hello-world`, { headers: asAdmin })).json(),
      events: await (await fetch(`${base}/api/admin/event/blog`, { headers: asAdmin })).json(),
    };
    expect(before.adminList).toHaveLength(2);
    expect(before.events).toHaveLength(1);

    vigie.child.kill("SIGTERM");
    expect(await vigie.exited).toBe(0);

    vigie = await startVigie({ configFile, port, cwd: directory });
    expect(readFileSync(tokenFile, "utf8")).toBe(token);
    expect(await publicList()).toEqual(before.publicList);
    expect(await (await fetch(`${base}/api/admin/comment/blog/hello-world`, { headers: asAdmin })).json()).toEqual(
      before.adminList,
    );
    expect(await (await fetch(`${base}/api/admin/event/blog`, { headers: asAdmin })).json()).toEqual(before.events);
    // The used challenges survived: a replay of the second comment is refused.
    const replay = await send(second);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toEqual({ error: "The challenge has already been used" });
    // The challenge secret survived too: a new comment goes through.
    expect((await post("Cid", "Third")).status).toBe(201);

    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain('comments_added_total{website="blog"} 1');
    expect(metrics).toContain('challenges_issued_total{website="blog"} 1');
    expect(metrics).toContain('comments_rejected_total{website="blog",reason="challenge"} 1');
  });
});
