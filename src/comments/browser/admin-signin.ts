/**
 * Signing in and out of the moderation page: with the comments admin token, or with a registry
 * user name and password exchanged for a registry token `comments-admin-<random>` valid one day
 * (POST /api/v1/registry/token), deleted on sign-out. Either is checked at once against an admin
 * route, so a wrong token or a user who is not an admin is told so at sign-in.
 */
import { alertText, button, deleteToken, failure, input, labelled, type Page, refusal } from "./admin-controls.js";
import { type Session, TOKEN_VALIDITY_DAYS, tokenName } from "./admin-logic.js";
import { h, request } from "./dom.js";

/** The controls of the sign-in section; `busy` while a sign-in is checked. */
interface SignInForm {
  readonly tokenForm: HTMLFormElement;
  readonly token: HTMLInputElement;
  readonly userForm: HTMLFormElement;
  readonly user: HTMLInputElement;
  readonly password: HTMLInputElement;
  readonly error: HTMLElement;
  busy: boolean;
}

/** A sign-in form: its title, each required field (label, control, id) and its submit button. */
function signInForm(
  title: string,
  fields: ReadonlyArray<readonly [string, HTMLInputElement, string]>,
  submit: string,
): HTMLFormElement {
  const form = h("form");
  form.append(h("h3", "", title));
  for (const [label, control, id] of fields) {
    control.required = true;
    form.append(labelled(label, control, id), control);
  }
  form.append(button(submit, "submit"));
  return form;
}

/** Builds the sign-in section: a form for the admin token, one for a registry account. */
function signInSection(): { section: HTMLElement; form: SignInForm } {
  const section = h("section", "signin");
  const heading = h("h2", "", "Sign in");
  const error = alertText();
  const token = input("password", "off");
  const tokenForm = signInForm(
    "With the comments admin token",
    [["Admin token", token, "token"]],
    "Sign in with the token",
  );
  const user = input("text", "username");
  const password = input("password", "current-password");
  const userForm = signInForm(
    "With a registry account",
    [
      ["User name", user, "user"],
      ["Password", password, "password"],
    ],
    "Sign in",
  );
  section.append(heading, tokenForm, userForm, error);
  return { section, form: { tokenForm, token, userForm, user, password, error, busy: false } };
}

/** Signs in with the admin token typed. */
async function signInWithToken(page: Page, form: SignInForm): Promise<void> {
  if (form.busy) return;
  form.busy = true;
  form.error.textContent = "";
  const value = form.token.value.trim();
  const refused = await refusal(value);
  form.busy = false;
  if (refused !== undefined) {
    form.error.textContent = `Sign-in refused: ${refused}.`;
    form.token.focus();
    return;
  }
  page.signedIn({ token: value });
}

/** Signs in with a registry account: creates a registry token, then checks that it opens the admin routes. */
async function signInWithAccount(page: Page, form: SignInForm): Promise<void> {
  if (form.busy) return;
  form.busy = true;
  form.error.textContent = "";
  const { user, password, error } = form;
  const name = tokenName(crypto.getRandomValues(new Uint8Array(8)));
  const answer = await request("/api/v1/registry/token", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, user: user.value, password: password.value, validity: TOKEN_VALIDITY_DAYS }),
  });
  password.value = "";
  const created: unknown = answer.status === 201 ? Reflect.get(Object(answer.body), "token") : undefined;
  if (typeof created !== "string") {
    form.busy = false;
    error.textContent = `Sign-in refused: ${failure(answer)}.`;
    password.focus();
    return;
  }
  const refused = await refusal(created);
  form.busy = false;
  if (refused !== undefined) {
    // Not an admin (403 forbidden): the token is of no use here, so it goes at once.
    await deleteToken(name, created);
    error.textContent = `Sign-in refused: ${refused}${refused === "forbidden" ? " (only admins moderate comments)" : ""}.`;
    user.focus();
    return;
  }
  page.signedIn({ token: created, user: user.value, tokenName: name });
}

/** Shows the sign-in forms in the page's view, the token field focused. */
export function showSignIn(page: Page): void {
  const { section, form } = signInSection();
  page.view.replaceChildren(section);
  form.token.focus();
  form.tokenForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void signInWithToken(page, form);
  });
  form.userForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void signInWithAccount(page, form);
  });
}

/** Ends the session, deleting its registry token when the page created one. */
export async function signOut(page: Page, current: Session): Promise<void> {
  let message = "Signed out.";
  if (current.tokenName !== undefined) {
    const answer = await deleteToken(current.tokenName, current.token);
    // 401: the token already expired or was deleted elsewhere; nothing is left to delete.
    if (answer.status !== 200 && answer.status !== 401) {
      message = `Signed out, but the registry token ${current.tokenName} could not be deleted (${failure(answer)}); it expires within a day.`;
    }
  }
  page.signIn(message);
}
