/**
 * Comment e-mail end to end: the real `vigie` process sends through a real SMTP server (Debian's
 * aiosmtpd), and the links of the messages are followed in Debian's Chromium (playwright-core,
 * never a downloaded browser): the moderators' approve link opens a page, one click approves; the
 * delete link deletes; a used link is refused; a reply reaches the commenter with RFC 8058 headers,
 * and its unsubscribe page unsubscribes in one click. The pages load nothing (no console error
 * under their Content-Security-Policy).
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, launchChromium } from "../support/browser.js";
import { freePort, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { type ReceivedMail, type SmtpServer, smtpUnavailable, startSmtpServer } from "../support/smtp.js";

const unavailable = existsSync(CHROMIUM) ? smtpUnavailable() : `${CHROMIUM} is missing`;
if (unavailable !== undefined) console.log(`skipping the comment e-mail end-to-end tests: ${unavailable}`);

const ADMIN_TOKEN = "e2e-comments-admin-token";

/** The answer of `what is the result of: a op b`. */
function solve(question: string): string {
  const match = /(\d+) ([-+*]) (\d+)$/.exec(question);
  const [left, right] = [Number(match?.[1]), Number(match?.[3])];
  return String(match?.[2] === "+" ? left + right : match?.[2] === "-" ? left - right : left * right);
}

describe.skipIf(unavailable !== undefined)("comment e-mail, end to end", () => {
  let smtp: SmtpServer;
  let vigie: VigieProcess;
  let browser: Browser;
  let api = "";

  beforeAll(async () => {
    smtp = await startSmtpServer();
    const directory = temporaryDirectory();
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    const config = {
      http: { port, "public-url": api },
      database: { url: `sqlite:${join(directory, "vigie.db")}` },
      outputs: {
        mail: { type: "email", "smtp-url": smtp.url, from: "Comments <comments@example.org>", to: ["ops@example.org"] },
      },
      comments: {
        "admin-token": ADMIN_TOKEN,
        "rate-limit": { comments: 1000, per: "10m" },
        websites: [{ name: "blog" }, { name: "open", moderation: "none" }],
        email: { output: "mail", admin: ["moderator@example.org"] },
      },
    };
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(configFile, JSON.stringify(config, null, 2));
    vigie = await startVigie({ configFile, port, cwd: directory });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    if (vigie !== undefined) await stopVigie(vigie);
    await smtp?.stop();
  });

  /** Posts a comment as the widget does; returns its id, read through the admin API. */
  const post = async (website: string, fields: Record<string, unknown>): Promise<string> => {
    const challenge = (await (await fetch(`${api}/api/v1/challenge/${website}/post`)).json()) as {
      question: string;
      signature: string;
      timestamp: number;
    };
    const { signature, timestamp } = challenge;
    const body = {
      author: "Ann",
      content: "Hello",
      answer: solve(challenge.question),
      signature,
      timestamp,
      ...fields,
    };
    const response = await fetch(`${api}/api/v1/comment/${website}/post`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(response.status, await response.clone().text()).toBe(201);
    const listed = await fetch(`${api}/api/admin/comment/${website}?limit=1`, {
      headers: { authorization: ADMIN_TOKEN },
    });
    const list = (await listed.json()) as Array<{ id: string }>;
    return list[0]?.id ?? "";
  };

  const state = async (id: string, website = "blog") => {
    const response = await fetch(`${api}/api/admin/comment/${website}/post/${id}`, {
      headers: { authorization: ADMIN_TOKEN },
    });
    if (response.status === 404) return "deleted";
    return ((await response.json()) as { approved: boolean }).approved ? "approved" : "pending";
  };

  /** The messages after the first `before`, once there are `count` more. */
  const mailsAfter = async (before: number, count: number): Promise<ReceivedMail[]> =>
    (await smtp.received(before + count)).slice(before);

  const open = async (url: string): Promise<{ page: Page; errors: string[] }> => {
    const page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on("console", (message) => {
      // Refusal pages (409, 404) are logged as failed loads; anything else (a CSP violation) counts.
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
        errors.push(message.text());
      }
    });
    await page.goto(url);
    return { page, errors };
  };

  it("approves and deletes from the moderators' links in one click each, once", async () => {
    const before = smtp.messages().length;
    const first = await post("blog", { content: "First <comment>" });
    const second = await post("blog", { content: "Second" });
    const [mail, other] = await mailsAfter(before, 2);
    if (mail === undefined || other === undefined) throw new Error("no mail");
    expect(mail.rcpt_tos).toEqual(["moderator@example.org"]);
    expect(mail.text).toContain("First <comment>");
    // Each message counts as an event of its output (read once the sender has its reply).
    const sentLine = 'stream_output_events_total{output="mail",outcome="sent"} 2';
    let metrics = "";
    for (let tries = 0; tries < 50 && !metrics.includes(sentLine); tries++) {
      if (tries > 0) await new Promise((wait) => setTimeout(wait, 100));
      metrics = await (await fetch(`${api}/metrics`)).text();
    }
    expect(metrics).toContain(sentLine);
    expect(metrics).toContain('stream_output_queue_events{output="mail"} 0');
    const link = (message: ReceivedMail, label: string) =>
      new RegExp(`${label}: (\\S+)`).exec(message.text ?? "")?.[1] ?? "";

    const { page, errors } = await open(link(mail, "Approve"));
    await page.getByRole("heading", { name: "Approve comment?" }).waitFor();
    expect(await page.getByText("First <comment>").count()).toBe(1);
    expect(await state(first)).toBe("pending");
    await page.getByRole("button", { name: "Approve this comment" }).click();
    await page.getByRole("heading", { name: "Comment approved" }).waitFor();
    expect(await state(first)).toBe("approved");
    // Replayed: refused.
    await page.goto(link(mail, "Approve"));
    await page.getByRole("heading", { name: "Already approved" }).waitFor();

    await page.goto(link(other, "Delete"));
    await page.getByRole("button", { name: "Delete this comment" }).click();
    await page.getByRole("heading", { name: "Comment deleted" }).waitFor();
    expect(await state(second)).toBe("deleted");
    await page.goto(link(other, "Delete"));
    await page.getByRole("heading", { name: "Comment gone" }).waitFor();
    expect(errors).toEqual([]);
    await page.close();
  });

  it("tells a commenter of a reply, with a one-click unsubscribe link that works", async () => {
    const parent = await post("open", { email: "ann@example.org", "notify-replies": true });
    const before = smtp.messages().length;
    await post("open", { author: "Bob", content: "A reply", parent });
    const [mail] = await mailsAfter(before, 1);
    if (mail === undefined) throw new Error("no mail");
    expect(mail.rcpt_tos).toEqual(["ann@example.org"]);
    expect(mail.text).toContain("A reply");
    expect(mail.headers["list-unsubscribe-post"]).toBe("List-Unsubscribe=One-Click");
    const url = /^<(.+)>$/.exec(mail.headers["list-unsubscribe"] ?? "")?.[1] ?? "";
    expect(url.startsWith(`${api}/comments/mail/unsubscribe?token=`)).toBe(true);

    const { page, errors } = await open(url);
    await page.getByRole("button", { name: "Unsubscribe" }).click();
    await page.getByRole("heading", { name: "Unsubscribed" }).waitFor();
    expect(errors).toEqual([]);
    await page.close();
    // What a mail client sends (RFC 8058): a POST without confirmation, answered as a success.
    const oneClick = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "List-Unsubscribe=One-Click",
    });
    expect(oneClick.status).toBe(200);

    // No more mail to Ann: a later reply goes nowhere, and the next message is someone else's.
    const later = smtp.messages().length;
    await post("open", { author: "Cy", content: "Another reply", parent });
    await post("blog", { content: "For the moderators" });
    const [next] = await mailsAfter(later, 1);
    expect(next?.rcpt_tos).toEqual(["moderator@example.org"]);
  });
});
