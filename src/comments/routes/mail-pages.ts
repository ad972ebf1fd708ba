/**
 * The pages the links of comment e-mail open (docs/comments.md, "E-mail"): server-rendered, no
 * script. `GET` only shows what the link would do and a button, so that mail scanners and link
 * previews that fetch the link change nothing; the button POSTs the form, which acts. The token is
 * in the query (`?token=`), signed and checked at each request (mail-links.ts); a used moderation
 * link is refused because its action is state-checked: approve acts on a pending comment only,
 * delete on an existing one. The unsubscribe POST is also RFC 8058's one-click POST, sent by mail
 * clients with the body `List-Unsubscribe=One-Click` and no confirmation.
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import { escapeHtml } from "../../platform/html.js";
import type { RouteDescription } from "../../platform/openapi.js";
import type { ListCache } from "../list-cache.js";
import { type CommentMail, MODERATE_PATH, UNSUBSCRIBE_PATH, unescapeHtml } from "../mail.js";
import { type MailLink, verifyLink } from "../mail-links.js";
import type { MailComment, MailStore } from "../storage-mail.js";

/**
 * The Content-Security-Policy of the pages: nothing may load (no script, style or image), forms
 * post to this origin only, no framing (clickjacking of the confirming button).
 */
export const MAIL_PAGE_CSP = "default-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/** The largest body taken by the pages' POST (the one-click body is 26 bytes), in bytes. */
const FORM_BODY_LIMIT = 4096;

/** What the pages need. */
export interface MailPagesOptions {
  /** The module's mail key. */
  readonly key: string;
  readonly store: MailStore;
  readonly lists: ListCache;
  readonly mail: CommentMail | undefined;
  /** The clock, milliseconds since the Unix epoch. */
  readonly now?: () => number;
}

interface TokenQuery {
  readonly token?: unknown;
}

/** One page: a title, paragraphs of text (escaped here), and an optional confirming form. */
function page(reply: FastifyReply, status: number, title: string, lines: readonly string[], form?: string): string {
  reply
    .code(status)
    .type("text/html; charset=utf-8")
    .header("Content-Security-Policy", MAIL_PAGE_CSP)
    // The token is in the address: no cache keeps it, no other site learns it from a referrer.
    // (`same-origin`, not `no-referrer`: under the latter a browser sends the form's POST with
    // `Origin: null`, which the origin check refuses.)
    .header("Cache-Control", "no-store")
    .header("Referrer-Policy", "same-origin")
    .header("X-Content-Type-Options", "nosniff");
  const body = lines.map((line) => `<p>${escapeHtml(line)}</p>`).join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title></head>
<body><main><h1>${escapeHtml(title)}</h1>
${body}
${form ?? ""}
</main></body></html>
`;
}

/** The form that confirms `label`, posting back to the link's own address. */
function confirmForm(path: string, token: string, label: string): string {
  return `<form method="post" action="${escapeHtml(`${path}?token=${encodeURIComponent(token)}`)}"><button type="submit">${escapeHtml(label)}</button></form>`;
}

/** The link of a valid token, else the refusal page of one malformed, badly signed or expired (400). */
function refusal(reply: FastifyReply, key: string, token: unknown, now: number): MailLink | string {
  const link = verifyLink(key, token, now);
  if (link === "expired") {
    return page(reply, 400, "Link expired", ["This link has expired. Use the moderation page instead."]);
  }
  if (link === "invalid") return page(reply, 400, "Invalid link", ["This link is not valid (copied incompletely?)."]);
  return link;
}

/** What a moderator sees of the comment before confirming. */
function describe(comment: MailComment): string[] {
  return [`${unescapeHtml(comment.author)} on ${comment.article} (${comment.website}):`, unescapeHtml(comment.content)];
}

/** The description of a page route; a POST takes a form body, which it ignores. */
function pageApi(summary: string, post = false): RouteDescription {
  return {
    summary,
    ...(post ? { body: { mediaType: "application/x-www-form-urlencoded", schema: { type: "string" } } } : {}),
    query: { token: { schema: { type: "string", maxLength: 200 }, required: true } },
    success: { mediaType: "text/html", schema: { type: "string" } },
    errors: [400, 404, 409],
    security: "none",
  };
}

/**
 * Registers `GET|POST /comments/mail/moderate` and `GET|POST /comments/mail/unsubscribe`, in a scope
 * of their own that takes form bodies (and ignores them: the token is in the address).
 */
export async function registerMailPages(app: FastifyInstance, options: MailPagesOptions): Promise<void> {
  await app.register(async (scope) => {
    const ignoreBody = (_request: unknown, _body: string, done: (error: null, body: undefined) => void) =>
      done(null, undefined);
    for (const type of ["application/x-www-form-urlencoded", "multipart/form-data"]) {
      scope.addContentTypeParser(type, { parseAs: "string", bodyLimit: FORM_BODY_LIMIT }, ignoreBody);
    }
    registerModeration(scope, options);
    registerUnsubscribe(scope, options);
  });
}

/** The approve and delete links: a confirming page, then the action. */
function registerModeration(app: FastifyInstance, options: MailPagesOptions): void {
  const now = options.now ?? Date.now;
  /** The link and its comment, or the page that refuses it. */
  const resolve = async (reply: FastifyReply, token: unknown) => {
    const link = refusal(reply, options.key, token, now());
    if (typeof link === "string") return link;
    if (link.action === "unsubscribe") return page(reply, 400, "Invalid link", ["This is not a moderation link."]);
    const comment = await options.store.find(link.commentId);
    if (comment === undefined) return page(reply, 404, "Comment gone", ["This comment was deleted already."]);
    if (link.action === "approve" && comment.approved) {
      return page(reply, 409, "Already approved", ["This comment was approved already; the link is used up."]);
    }
    return { link, comment };
  };
  const config = (summary: string, post = false) => ({ config: { openapi: pageApi(summary, post) } });
  app.get<{ Querystring: TokenQuery }>(
    MODERATE_PATH,
    config("confirm page of an e-mailed approve or delete link"),
    async (request, reply) => {
      const found = await resolve(reply, request.query.token);
      if (typeof found === "string") return found;
      const verb = found.link.action === "approve" ? "Approve" : "Delete";
      const form = confirmForm(MODERATE_PATH, String(request.query.token), `${verb} this comment`);
      return page(reply, 200, `${verb} comment?`, describe(found.comment), form);
    },
  );
  app.post<{ Querystring: TokenQuery }>(
    MODERATE_PATH,
    config("approve or delete the comment of an e-mailed link", true),
    async (request, reply) => {
      const found = await resolve(reply, request.query.token);
      if (typeof found === "string") return found;
      const { comment, link } = found;
      const done = link.action === "approve" ? await approve(options, comment) : await remove(options, comment);
      if (!done) return page(reply, 409, "Nothing to do", ["This comment was moderated already; the link is used up."]);
      return page(reply, 200, link.action === "approve" ? "Comment approved" : "Comment deleted", describe(comment));
    },
  );
}

/** Approves a pending comment, then tells a reply's parent author. @returns false when not pending */
async function approve(options: MailPagesOptions, comment: MailComment): Promise<boolean> {
  const changed = await options.store.approvePending(comment.id);
  options.lists.invalidate(comment.website, comment.article);
  if (changed) await options.mail?.replyApproved(comment.id);
  return changed;
}

async function remove(options: MailPagesOptions, comment: MailComment): Promise<boolean> {
  const deleted = await options.store.delete(comment.id);
  options.lists.invalidate(comment.website, comment.article);
  return deleted;
}

/** The unsubscribe link: a page with a button on GET; POST unsubscribes at once (RFC 8058). */
function registerUnsubscribe(app: FastifyInstance, options: MailPagesOptions): void {
  const now = options.now ?? Date.now;
  const check = (reply: FastifyReply, token: unknown): MailLink | string => {
    const link = refusal(reply, options.key, token, now());
    if (typeof link !== "string" && link.action !== "unsubscribe") {
      return page(reply, 400, "Invalid link", ["This is not an unsubscribe link."]);
    }
    return link;
  };
  app.get<{ Querystring: TokenQuery }>(
    UNSUBSCRIBE_PATH,
    { config: { openapi: pageApi("confirm page of an e-mailed unsubscribe link") } },
    async (request, reply) => {
      const link = check(reply, request.query.token);
      if (typeof link === "string") return link;
      const form = confirmForm(UNSUBSCRIBE_PATH, String(request.query.token), "Unsubscribe");
      return page(
        reply,
        200,
        "Stop reply notifications?",
        ["You will get no more e-mail about replies to this comment."],
        form,
      );
    },
  );
  app.post<{ Querystring: TokenQuery }>(
    UNSUBSCRIBE_PATH,
    { config: { openapi: pageApi("unsubscribe from reply notifications (RFC 8058 one-click)", true) } },
    async (request, reply) => {
      const link = check(reply, request.query.token);
      if (typeof link === "string") return link;
      // Idempotent: unsubscribing twice, or from a deleted comment, is the same success.
      await options.store.unsubscribe(link.commentId);
      return page(reply, 200, "Unsubscribed", ["You will get no more e-mail about replies to this comment."]);
    },
  );
}
