/**
 * The e-mail of the comments module (docs/comments.md, "E-mail"): a message to the moderators for
 * each new comment that `email.notify-admin` selects, with signed approve and delete links, and a
 * message to a commenter who asked for it when a reply to their comment is approved, with a signed
 * one-click unsubscribe link (RFC 8058). Mail leaves through the platform's {@link Mailer}; an
 * address is never logged.
 */

import type { FastifyBaseLogger } from "fastify";
import { escapeHtml } from "../platform/html.js";
import type { Mail, Mailer } from "../platform/mailer.js";
import { decodeEntities } from "./browser/widget-logic.js";
import { type MailAction, MODERATION_LINK_TTL_MS, signLink, UNSUBSCRIBE_LINK_TTL_MS } from "./mail-links.js";
import type { MailComment, MailStore } from "./storage-mail.js";

/** The path of the moderation link's page; the token is its `token` query parameter. */
export const MODERATE_PATH = "/comments/mail/moderate";
/** The path of the unsubscribe link's page (and of its one-click POST). */
export const UNSUBSCRIBE_PATH = "/comments/mail/unsubscribe";

/** `comments.email`, resolved. */
export interface CommentMailSettings {
  /** The `email` output that sends. */
  readonly output: string;
  readonly notifyAdmin: "pending" | "all" | "none";
  /** The moderators' addresses (`email.admin`), never the output's own `to`. */
  readonly admins: readonly string[];
  /** The key that signs the links. */
  readonly key: string;
  /** `http.public-url`, where the links point. */
  readonly publicUrl: string;
  /** The clock, milliseconds since the Unix epoch. */
  readonly now?: () => number;
}

/** A new comment, its text as posted (not escaped). */
export interface PostedComment {
  readonly id: string;
  readonly website: string;
  readonly article: string;
  readonly author: string;
  readonly content: string;
  readonly approved: boolean;
  readonly spam: boolean;
}

/** The text of a stored (HTML-escaped) field, as the visitor wrote it: the widget's own decoding. */
export const unescapeHtml: (text: string) => string = decodeEntities;

/** One line of at most 80 characters, for subjects. */
function oneLine(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

/** Sends the module's mail. */
export class CommentMail {
  readonly #mailer: Mailer;
  readonly #settings: CommentMailSettings;
  readonly #store: MailStore;
  readonly #log: FastifyBaseLogger;
  readonly #now: () => number;
  readonly #base: string;

  constructor(mailer: Mailer, settings: CommentMailSettings, store: MailStore, log: FastifyBaseLogger) {
    this.#mailer = mailer;
    this.#settings = settings;
    this.#store = store;
    this.#log = log;
    this.#now = settings.now ?? Date.now;
    this.#base = settings.publicUrl.replace(/\/+$/, "");
  }

  /** The address of a signed link for `action` on comment `id`. */
  link(action: MailAction, id: string): string {
    const ttl = action === "unsubscribe" ? UNSUBSCRIBE_LINK_TTL_MS : MODERATION_LINK_TTL_MS;
    const token = signLink(this.#settings.key, { action, commentId: id, expiresAt: this.#now() + ttl });
    const path = action === "unsubscribe" ? UNSUBSCRIBE_PATH : MODERATE_PATH;
    return `${this.#base}${path}?token=${token}`;
  }

  #send(mail: Omit<Mail, "output">, what: string): void {
    this.#mailer.send({ ...mail, output: this.#settings.output }, (outcome, reason) => {
      if (outcome !== "delivered") this.#log.warn({ reason }, `comments: ${what} mail ${outcome}`);
    });
  }

  /**
   * Tells the moderators of a new comment when `notify-admin` asks for it: `pending` for comments
   * that wait (spam held by a check included, marked as such), `all` for every comment. A pending
   * comment's message has approve and delete links, an approved one's a delete link.
   */
  newComment(comment: PostedComment): void {
    const { notifyAdmin, admins } = this.#settings;
    if (admins.length === 0 || notifyAdmin === "none" || (notifyAdmin === "pending" && comment.approved)) return;
    const links: Array<[string, string]> = [];
    if (!comment.approved) links.push(["Approve", this.link("approve", comment.id)]);
    links.push(["Delete", this.link("delete", comment.id)]);
    const state = comment.spam ? "held as spam" : comment.approved ? "published" : "awaiting moderation";
    const where = `${comment.article} (${comment.website})`;
    const text = [
      `${comment.author} commented on ${where}, ${state}:`,
      "",
      comment.content,
      "",
      ...links.map(([label, url]) => `${label}: ${url}`),
      "",
      "Each link opens a page that asks for one confirming click; it works for 7 days.",
    ].join("\n");
    const html = [
      `<p>${escapeHtml(comment.author)} commented on ${escapeHtml(where)}, ${state}:</p>`,
      `<blockquote style="white-space: pre-wrap">${escapeHtml(comment.content)}</blockquote>`,
      `<p>${links.map(([label, url]) => `<a href="${escapeHtml(url)}">${label}</a>`).join(" · ")}</p>`,
      "<p>Each link opens a page that asks for one confirming click; it works for 7 days.</p>",
    ].join("\n");
    const subject = `${comment.spam ? "[spam] " : ""}New comment on ${where} by ${oneLine(comment.author)}`;
    this.#send({ to: admins, subject, text, html }, "moderation");
  }

  /**
   * Tells the author of the comment `reply` answers, when they gave an address and asked for
   * replies, and did not write the reply themselves (same address, any case). Called once, when the
   * reply becomes visible (approved). Failures are logged, never thrown.
   */
  async replyApproved(replyId: string): Promise<void> {
    try {
      const reply = await this.#store.find(replyId);
      if (reply?.parent === undefined || !reply.approved) return;
      const parent = await this.#store.find(reply.parent);
      if (parent?.email === undefined || !parent.notifyReplies) return;
      if (reply.email !== undefined && reply.email.toLowerCase() === parent.email.toLowerCase()) return;
      this.#sendReply(parent, parent.email, reply);
    } catch (error) {
      this.#log.warn({ err: error }, "comments: reply notification failed");
    }
  }

  #sendReply(parent: MailComment, address: string, reply: MailComment): void {
    const unsubscribe = this.link("unsubscribe", parent.id);
    const author = unescapeHtml(reply.author);
    const content = unescapeHtml(reply.content);
    const text = [
      `${author} replied to your comment on ${parent.article}:`,
      "",
      content,
      "",
      `To stop these messages: ${unsubscribe}`,
    ].join("\n");
    const html = [
      `<p>${escapeHtml(author)} replied to your comment on ${escapeHtml(parent.article)}:</p>`,
      `<blockquote style="white-space: pre-wrap">${escapeHtml(content)}</blockquote>`,
      `<p><a href="${escapeHtml(unsubscribe)}">Stop these messages</a></p>`,
    ].join("\n");
    this.#send(
      {
        to: [address],
        subject: `${oneLine(author)} replied to your comment on ${parent.article}`,
        text,
        html,
        // RFC 2369 and RFC 8058: mail clients show an unsubscribe button that POSTs to the link.
        headers: { "List-Unsubscribe": `<${unsubscribe}>`, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" },
      },
      "reply",
    );
  }
}
