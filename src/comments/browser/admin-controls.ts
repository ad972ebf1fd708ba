/**
 * What the parts of the moderation page share: the page itself (its notice, its view, how it signs
 * in and out), the form controls it builds, and its calls of the API with the session's token.
 */
import type { Session } from "./admin-logic.js";
import { h, request } from "./dom.js";
import { errorOf } from "./widget-logic.js";

/** The moderation page, as its parts see it. */
export interface Page {
  /** Announces what the page did: sign-in, sign-out, approvals and deletions. */
  readonly notice: HTMLElement;
  /** Holds the sign-in form or the moderation view. */
  readonly view: HTMLElement;
  /** Forgets the session and shows the sign-in form, announcing `message`. */
  signIn(message?: string): void;
  /** Keeps `session`, announces it, and shows the moderation view. */
  signedIn(session: Session): void;
}

/** The answer of a request: its status (0: unreachable) and its JSON body. */
export type Answer = { status: number; body: unknown };

/** An admin call of the session: `path`, with `method` (GET by default). */
export type AdminCall = (path: string, method?: string) => Promise<Answer>;

/** The sentence of a failed request: the server's, else its status. */
export function failure(answer: Answer): string {
  if (answer.status === 0) return "The server cannot be reached";
  return errorOf(answer.body) ?? `HTTP status ${answer.status}`;
}

/** A `<label>` for `control`, whose id it sets. */
export function labelled(text: string, control: HTMLInputElement, id: string): HTMLLabelElement {
  control.id = id;
  const label = h("label", "", text);
  label.htmlFor = id;
  return label;
}

/** A text `<input>` of `type`, with its `autocomplete`. */
export function input(type: string, autocomplete: string): HTMLInputElement {
  const element = h("input");
  element.type = type;
  element.setAttribute("autocomplete", autocomplete);
  return element;
}

/** A `<button>` of `type` with its text, and an accessible name when the text alone is not enough. */
export function button(text: string, type: "button" | "submit" = "button", label?: string): HTMLButtonElement {
  const element = h("button", "", text);
  element.type = type;
  if (label !== undefined) element.setAttribute("aria-label", label);
  return element;
}

/** A paragraph that announces errors (`role="alert"`). */
export function alertText(): HTMLParagraphElement {
  const error = h("p", "error");
  error.setAttribute("role", "alert");
  return error;
}

/** An admin or registry call with `token`, never from a cache. */
export function call(path: string, token: string, init: RequestInit = {}): Promise<Answer> {
  return request(path, { ...init, cache: "no-store", headers: { ...init.headers, authorization: `Bearer ${token}` } });
}

/**
 * Whether `token` opens the admin routes: undefined when it does, else why not (the comments
 * admin token cannot be checked otherwise than by using it).
 */
export async function refusal(token: string): Promise<string | undefined> {
  const answer = await call("/api/admin/website", token);
  return answer.status === 200 ? undefined : failure(answer);
}

/** Deletes the registry token `name`, with itself as credential. */
export function deleteToken(name: string, token: string): Promise<Answer> {
  return call(`/api/v1/registry/token/${encodeURIComponent(name)}`, token, { method: "DELETE" });
}

/** The admin calls of `session`; a 401 ends the session (expired or deleted token) and throws, to stop the caller. */
export function adminCalls(page: Page, session: Session): AdminCall {
  return async (path, method = "GET") => {
    const answer = await call(path, session.token, { method });
    if (answer.status === 401) {
      page.signIn(`Signed out: ${failure(answer)}. Sign in again.`);
      throw new Error("signed out");
    }
    return answer;
  };
}
