/**
 * HTML escaping, for text that a page inserts as HTML: the author and content of comments and the
 * bodies quoted in healthcheck failure messages, text that Vigie does not control.
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
 * Replaces `&` `<` `>` `"` `'` by `&amp;` `&lt;` `&gt;` `&quot;` `&#39;`, which is enough for text
 * inserted as element content or inside a quoted attribute value. Nothing else changes: escaping the
 * result again escapes its ampersands again.
 */
export function escapeHtml(text: string): string {
  return text.replace(SPECIAL, (character) => ENTITIES[character] ?? character);
}
