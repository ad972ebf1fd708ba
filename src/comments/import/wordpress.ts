/**
 * WordPress's export (Tools → Export, the WXR format: RSS 2.0 with `wp:` elements): one `<item>`
 * per post with its `<link>`, `<wp:post_name>` (slug) and `<wp:post_id>`, holding its
 * `<wp:comment>` elements: `<wp:comment_id>`, `<wp:comment_author>`, `<wp:comment_author_email>`,
 * `<wp:comment_author_url>`, `<wp:comment_date_gmt>` (`YYYY-MM-DD hh:mm:ss`, UTC),
 * `<wp:comment_content>` (the text as typed, HTML allowed), `<wp:comment_approved>` (`1`, `0`,
 * `spam` or `trash`), `<wp:comment_type>` (empty or `comment`; `pingback` and `trackback` are not
 * comments) and `<wp:comment_parent>` (`0` for none).
 *
 * Memory: one post and its comments at a time; the post's body (`content:encoded`) is not kept.
 */
import { htmlToText } from "./html-text.js";
import { type ImportItem, type ThreadRef, timeOf } from "./items.js";
import { textOf, type XmlElement, xmlRecords } from "./xml.js";

/** The item of one `<wp:comment>` of the post `thread`. */
function commentOf(comment: XmlElement, thread: ThreadRef): ImportItem {
  const state = textOf(comment, "wp:comment_approved");
  if (state === "spam") return { kind: "skipped", reason: "spam" };
  if (state === "trash" || state === "post-trashed") return { kind: "skipped", reason: "deleted" };
  const type = textOf(comment, "wp:comment_type") ?? "";
  if (type === "pingback" || type === "trackback") return { kind: "skipped", reason: "pingback" };
  const sourceId = textOf(comment, "wp:comment_id");
  const timestamp = timeOf(textOf(comment, "wp:comment_date_gmt")) ?? timeOf(textOf(comment, "wp:comment_date"));
  if (sourceId === undefined || sourceId === "" || timestamp === undefined)
    return { kind: "skipped", reason: "no-thread" };
  const parent = textOf(comment, "wp:comment_parent");
  return {
    kind: "comment",
    sourceId,
    thread,
    parentSourceId: parent === undefined || parent === "" || parent === "0" ? undefined : parent,
    author: textOf(comment, "wp:comment_author") ?? "",
    authorWebsite: textOf(comment, "wp:comment_author_url"),
    email: textOf(comment, "wp:comment_author_email"),
    // WordPress keeps the text as typed: its line breaks are the author's.
    content: htmlToText(childText(comment, "wp:comment_content"), true),
    timestamp,
    approved: state === "1",
  };
}

/** The untrimmed text of a child (the content's inner line breaks matter). */
function childText(element: XmlElement, name: string): string {
  return element.children.find((child) => child.name === name)?.text ?? "";
}

/**
 * The comments of a WordPress export, post by post.
 * @throws ImportFormatError for malformed XML (file, line and column)
 */
export async function* wordpressItems(path: string): AsyncGenerator<ImportItem> {
  const selection = {
    names: new Set(["item"]),
    depth: 2,
    skipText: new Set(["content:encoded", "excerpt:encoded"]),
  };
  for await (const item of xmlRecords(path, selection)) {
    const thread: ThreadRef = {
      url: textOf(item, "link"),
      slug: textOf(item, "wp:post_name") || undefined,
      id: textOf(item, "wp:post_id"),
    };
    for (const child of item.children) {
      if (child.name === "wp:comment") yield commentOf(child, thread);
    }
  }
}
