/**
 * The registry pages' script (docs/cargo.md, "Web pages"), bundled by esbuild into
 * `dist/registry/browser/pages.js`. Only a private registry's pages load it: the server answers a
 * request without a token with a sign-in frame (`<main id="registry" data-signin>`), which this
 * script fills with a sign-in form. Signing in with a user name and password creates a registry
 * token valid one day (POST /api/v1/registry/token), kept in `sessionStorage` and deleted at
 * sign-out; a token may also be pasted. The script then asks the server for the same page with the
 * token and shows the `<main>` it answers, and does the same for every registry link and search.
 *
 * The HTML it inserts is the server's own rendering of the page (README made inert there); nothing
 * the user types is inserted as HTML.
 */
import { isRegistryPage, parseSession, SESSION_KEY, type Session, TOKEN_VALIDITY_DAYS, tokenName } from "./session.js";

function h<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (text !== undefined) element.textContent = text;
  return element;
}

/** A labelled input of the sign-in form. */
function field(form: HTMLFormElement, label: string, id: string, type: string, autocomplete: string): HTMLInputElement {
  const input = h("input");
  Object.assign(input, { id, type, autocomplete, required: true });
  const caption = h("label", label);
  caption.htmlFor = id;
  form.append(caption, input);
  return input;
}

/** Why an API answer refused: its `error` sentence, else the status. */
async function reason(response: Response): Promise<string> {
  try {
    const body: unknown = await response.json();
    const error: unknown = typeof body === "object" && body !== null ? Reflect.get(body, "error") : undefined;
    if (typeof error === "string") return error;
  } catch {
    // not JSON
  }
  return `HTTP ${response.status}`;
}

const main = document.getElementById("registry");

/** Shows the sign-in forms, with a message (why the last session ended). */
function showSignIn(message = ""): void {
  if (main === null) return;
  sessionStorage.removeItem(SESSION_KEY);
  const notice = h("p", message);
  notice.setAttribute("role", "status");
  const account = h("form");
  account.append(h("h2", "With your registry account"));
  const user = field(account, "User name", "user", "text", "username");
  const password = field(account, "Password", "password", "password", "current-password");
  account.append(h("button", "Sign in"));
  const pasted = h("form");
  pasted.append(h("h2", "Or with a token"));
  const token = field(pasted, "Token", "token", "password", "off");
  pasted.append(h("button", "Sign in with the token"));
  main.replaceChildren(h("h1", "Sign in"), notice, account, pasted);
  user.focus();
  account.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = tokenName(crypto.getRandomValues(new Uint8Array(8)));
    const body = JSON.stringify({ name, user: user.value, password: password.value, validity: TOKEN_VALIDITY_DAYS });
    password.value = "";
    void fetch("/api/v1/registry/token", { method: "POST", headers: { "content-type": "application/json" }, body })
      .then(async (response) => {
        const created: unknown =
          response.status === 201 ? Reflect.get(Object(await response.json()), "token") : undefined;
        if (typeof created !== "string") throw new Error(await reason(response));
        return signedIn({ token: created, user: user.value, tokenName: name });
      })
      .catch((error: unknown) => {
        notice.textContent = `Sign-in refused: ${error instanceof Error ? error.message : String(error)}.`;
        password.focus();
      });
  });
  pasted.addEventListener("submit", (event) => {
    event.preventDefault();
    void signedIn({ token: token.value.trim() });
  });
}

function session(): Session | undefined {
  return parseSession(sessionStorage.getItem(SESSION_KEY));
}

async function signedIn(current: Session): Promise<void> {
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(current));
  await show(location.href);
}

/** Asks for a page with the token and shows its `<main>`; back to sign-in when the token is refused. */
async function show(url: string): Promise<void> {
  const current = session();
  if (main === null) return;
  if (current === undefined) return showSignIn();
  let text: string;
  try {
    const response = await fetch(url, { headers: { authorization: `Bearer ${current.token}` }, cache: "no-store" });
    text = await response.text();
  } catch {
    return showSignIn("The registry could not be reached. Sign in again.");
  }
  const page = new DOMParser().parseFromString(text, "text/html");
  const content = page.getElementById("registry");
  if (content === null || content.dataset.signin !== undefined) {
    return showSignIn("The token was refused (expired, deleted or wrong). Sign in again.");
  }
  document.title = page.title;
  // A copy of the list first: adopting a node takes it out of the live NodeList.
  const nodes = [...content.childNodes].map((node) => document.adoptNode(node));
  main.replaceChildren(signOutBar(current), ...nodes);
}

/** Who is signed in, and the sign-out button (which deletes the token the page created). */
function signOutBar(current: Session): HTMLElement {
  const bar = h("p", current.user === undefined ? "Signed in with a token. " : `Signed in as ${current.user}. `);
  const button = h("button", "Sign out");
  button.type = "button";
  button.addEventListener("click", () => {
    const name = current.tokenName;
    const deleted =
      name === undefined
        ? Promise.resolve()
        : fetch(`/api/v1/registry/token/${encodeURIComponent(name)}`, {
            method: "DELETE",
            headers: { authorization: `Bearer ${current.token}` },
          }).then(() => undefined);
    void deleted.catch(() => undefined).then(() => showSignIn("Signed out."));
  });
  bar.append(button);
  return bar;
}

/** Follows a registry link or search with the token, keeping the address bar and history right. */
function navigate(url: URL): void {
  history.pushState(null, "", url);
  void show(url.href).then(() => window.scrollTo(0, 0));
}

if (main !== null && main.dataset.signin !== undefined) {
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element ? event.target.closest("a") : null;
    if (link === null || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const url = new URL(link.href, location.href);
    if (session() === undefined || !isRegistryPage(url, location.origin)) return;
    event.preventDefault();
    navigate(url);
  });
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || form.method !== "get" || session() === undefined) return;
    const url = new URL(form.action, location.href);
    if (!isRegistryPage(url, location.origin)) return;
    event.preventDefault();
    for (const [key, value] of new FormData(form)) if (typeof value === "string") url.searchParams.set(key, value);
    navigate(url);
  });
  window.addEventListener("popstate", () => void show(location.href));
  void show(location.href);
}
