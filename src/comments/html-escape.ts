/**
 * HTML escaping of the author and content of a comment (comments.md §5): they are stored escaped so
 * that a static page can insert them as HTML without further escaping.
 */

const ENTITIES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

const SPECIAL = /[&<>"']/g;

/**
 * Replaces `&` `<` `>` `"` `'` by `&amp;` `&lt;` `&gt;` `&quot;` `&#39;` (comments.md §5), which is
 * enough for text inserted as element content or inside a quoted attribute value. Nothing else
 * changes: escaping the result again escapes its ampersands again.
 */
export function escapeHtml(text: string): string {
  return text.replace(SPECIAL, (character) => ENTITIES[character] as string);
}
