/**
 * The mail flows' storage on SQLite and PostgreSQL: a comment found by id with its address, the
 * `first` mode's lookup (address without regard to case, approved comments of the website only),
 * approving only a pending comment (a used link), deleting once, unsubscribing, spam events, and the
 * spam flag through the admin list and the approval that clears it.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { CommentStore, type NewComment } from "../../src/comments/storage.js";
import { MailStore } from "../../src/comments/storage-mail.js";
import { DATABASE_KINDS } from "../support/databases.js";
import { commentsServers } from "./support.js";

const NOW = 1_700_000_000_000;

describe.each(DATABASE_KINDS)("mail storage on $kind", ({ kind, skip }) => {
  const servers = commentsServers(kind, skip);
  const open = async () => {
    const { database } = (await servers.start()).context;
    return { comments: new CommentStore(database, { limit: 1000, windowMs: 60_000 }), mail: new MailStore(database) };
  };
  const comment = (website: string, fields: Partial<NewComment> = {}): NewComment => ({
    website,
    article: "post",
    author: "Ann &amp; Co",
    authorWebsite: undefined,
    content: "Hello",
    approved: false,
    signature: randomBytes(32).toString("hex"),
    challengeExpiresAt: NOW + 600_000,
    clientAddress: "192.0.2.1",
    now: NOW,
    ...fields,
  });

  it.skipIf(skip)("finds a comment by id with its address, approves it once and deletes it once", async () => {
    const { comments, mail } = await open();
    const added = await comments.add(comment("m1", { email: "Ann@Example.org", notifyReplies: true }));
    expect(await mail.find(added.id)).toEqual({
      id: added.id,
      website: "m1",
      article: "post",
      author: "Ann &amp; Co",
      content: "Hello",
      approved: false,
      spam: false,
      parent: undefined,
      email: "Ann@Example.org",
      notifyReplies: true,
    });
    expect(await mail.approvePending(added.id)).toBe(true);
    expect(await mail.approvePending(added.id)).toBe(false);
    expect((await mail.find(added.id))?.approved).toBe(true);
    expect(await mail.unsubscribe(added.id)).toBe(true);
    expect((await mail.find(added.id))?.notifyReplies).toBe(false);
    expect(await mail.delete(added.id)).toBe(true);
    expect(await mail.delete(added.id)).toBe(false);
    expect(await mail.find(added.id)).toBeUndefined();
    expect(await mail.unsubscribe(added.id)).toBe(false);
  });

  it.skipIf(skip)("knows authors approved before on the website, by name and address in any case", async () => {
    const { comments, mail } = await open();
    await comments.add(comment("m2", { email: "ann@example.org", approved: true }));
    await comments.add(comment("m2", { author: "Bob", email: "bob@example.org" }));
    await comments.add(comment("m2-other", { author: "Cy", email: "cy@example.org", approved: true }));
    expect(await mail.approvedBefore("m2", "Ann &amp; Co", "ANN@example.org")).toBe(true);
    expect(await mail.approvedBefore("m2", "Ann &amp; Co", "other@example.org")).toBe(false);
    expect(await mail.approvedBefore("m2", "Ann", "ann@example.org")).toBe(false);
    // Pending comments and other websites do not count.
    expect(await mail.approvedBefore("m2", "Bob", "bob@example.org")).toBe(false);
    expect(await mail.approvedBefore("m2", "Cy", "cy@example.org")).toBe(false);
  });

  it.skipIf(skip)("marks spam in admin answers only, clears it on approval, and logs spam events", async () => {
    const { comments, mail } = await open();
    const held = await comments.add(comment("m3", { spam: true }));
    expect(held).toMatchObject({ approved: false, spam: true });
    expect(await comments.get("m3", "post", held.id)).toMatchObject({ spam: true });
    expect((await comments.websitePage("m3", false, { limit: 10, before: undefined }))[0]).toMatchObject({
      spam: true,
    });
    expect(await comments.approve("m3", "post", held.id)).toBe("approved");
    expect(await comments.approve("m3", "post", held.id)).toBe("unchanged");
    expect(await comments.approve("m3", "post", "6f1c0e2a-1b2c-4d3e-8f40-5a6b7c8d9e0f")).toBe("missing");
    const [listed] = await comments.list("m3", "post", true);
    expect(listed).not.toHaveProperty("spam");
    expect(await comments.get("m3", "post", held.id)).not.toHaveProperty("spam");

    const spent = { signature: "ab".repeat(32), expiresAt: NOW + 600_000 };
    await mail.addSpamEvent("m3", "post", "honeypot", NOW + 1, spent);
    // One event per solved challenge: a replay is refused and writes nothing.
    await expect(mail.addSpamEvent("m3", "post", "honeypot", NOW + 2, spent)).rejects.toThrow(
      "The challenge has already been used",
    );
    const events = await comments.events("m3");
    expect(events.map((event) => event.type)).toEqual(["new-comment", "spam"]);
    expect(events[1]?.message).toBe("Spam refused on article post (honeypot)");
    expect(await mail.find(events[1]?.["comment-id"] ?? "")).toBeUndefined();
  });
});
