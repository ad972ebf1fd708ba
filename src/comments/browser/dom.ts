/**
 * The one DOM helper of the comment widget and the moderation page: elements are built with
 * `createElement` and filled with `textContent`, never from HTML, so no comment text is ever parsed.
 */

/** A new `<tag>` with an optional class and text. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

/**
 * GETs or sends JSON and reads the JSON answer, whatever the status.
 * @returns the status (0 when the request failed: network, CORS) and the parsed body (undefined
 *   when there is none or it is not JSON)
 */
export async function request(url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown }> {
  try {
    const response = await fetch(url, init);
    let body: unknown;
    try {
      body = await response.json();
    } catch {
      body = undefined;
    }
    return { status: response.status, body };
  } catch {
    return { status: 0, body: undefined };
  }
}
