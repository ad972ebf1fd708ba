/**
 * An Akismet-compatible comment check (https://akismet.com/developers/comment-check/): one form
 * POST per comment with `api_key`, `blog`, `user_ip`, `user_agent`, `referrer`, `permalink`,
 * `comment_type`, `comment_author`, `comment_author_url`, `comment_content` and `blog_charset`;
 * the service answers the body `true` (spam) or `false`. The commenter's e-mail address is not
 * sent: it is kept for notifications only. A failure (timeout, other answer) never refuses a
 * comment: it is logged, and the comment is moderated as usual.
 */

/** What the check needs of a comment. */
export interface AkismetComment {
  /** The website's page, or Vigie's public URL: Akismet's `blog`. */
  readonly blog: string;
  readonly permalink: string | undefined;
  readonly userIp: string;
  readonly userAgent: string;
  readonly referrer: string;
  /** As posted (not HTML-escaped). */
  readonly author: string;
  readonly authorUrl: string | undefined;
  readonly content: string;
}

/** `spam`, `ham`, or `unknown` with the reason when the service could not tell. */
export type AkismetVerdict = { readonly kind: "spam" | "ham" } | { readonly kind: "unknown"; readonly reason: string };

/** How long a check may take, in milliseconds, before the comment is moderated without it. */
export const AKISMET_TIMEOUT_MS = 5_000;

/** The form fields of a comment-check call. */
export function akismetForm(key: string, comment: AkismetComment): URLSearchParams {
  const form = new URLSearchParams({
    api_key: key,
    blog: comment.blog,
    user_ip: comment.userIp,
    user_agent: comment.userAgent,
    referrer: comment.referrer,
    comment_type: "comment",
    comment_author: comment.author,
    comment_content: comment.content,
    blog_charset: "UTF-8",
  });
  if (comment.permalink !== undefined) form.set("permalink", comment.permalink);
  if (comment.authorUrl !== undefined) form.set("comment_author_url", comment.authorUrl);
  return form;
}

/**
 * Asks the service at `url` about `comment`.
 * @returns the verdict; never throws
 */
export async function checkWithAkismet(url: string, key: string, comment: AkismetComment): Promise<AkismetVerdict> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8", "user-agent": "Vigie" },
      body: akismetForm(key, comment),
      signal: AbortSignal.timeout(AKISMET_TIMEOUT_MS),
      redirect: "error",
    });
    const text = (await response.text()).trim();
    if (response.ok && text === "true") return { kind: "spam" };
    if (response.ok && text === "false") return { kind: "ham" };
    const debug = response.headers.get("x-akismet-debug-help") ?? text.slice(0, 100);
    return { kind: "unknown", reason: `HTTP ${response.status} ${debug}`.trim() };
  } catch (error) {
    return { kind: "unknown", reason: error instanceof Error ? error.message : String(error) };
  }
}
