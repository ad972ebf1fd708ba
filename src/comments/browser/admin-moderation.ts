/**
 * The moderation view of a signed-in moderator: who is signed in, the websites moderated (every
 * website the server lists, or those typed, kept in `localStorage`: they are no secret), and the
 * "Pending" and "Approved" tabs. After every change the lists are read again from the API: no copy
 * is trusted.
 */

import { type ApprovedList, approvedPanel } from "./admin-approved.js";
import {
  type AdminCall,
  adminCalls,
  alertText,
  button,
  failure,
  input,
  labelled,
  type Page,
} from "./admin-controls.js";
import { actionSummary, parseWebsites, type Session, WEBSITES_KEY, websiteList } from "./admin-logic.js";
import { type PendingList, pendingPanel } from "./admin-pending.js";
import { signOut } from "./admin-signin.js";
import type { Act } from "./admin-table.js";
import { tabList } from "./admin-tabs.js";
import { h } from "./dom.js";

/** The bar naming the session, with its "Sign out" button. */
function sessionBar(page: Page, current: Session): HTMLElement {
  const bar = h("div", "bar");
  const who = h(
    "p",
    "",
    current.user === undefined
      ? "Session: the comments admin token."
      : `Session: ${current.user}, with the registry token ${current.tokenName ?? ""} (valid one day).`,
  );
  const out = button("Sign out");
  out.addEventListener("click", () => signOut(page, current));
  bar.append(who, out);
  return bar;
}

/** The "Websites" form: its field (empty: every website) and its error. */
function websitesForm(): { form: HTMLFormElement; field: HTMLInputElement; error: HTMLElement } {
  const form = h("form", "websites");
  const field = input("text", "off");
  field.value = localStorage.getItem(WEBSITES_KEY) ?? "";
  field.placeholder = "all";
  field.setAttribute("aria-describedby", "websites-hint websites-error");
  const hint = h(
    "p",
    "hint",
    "Empty: every website. Or the names of the websites to moderate (the data-website of their widget), separated by spaces; kept in this browser.",
  );
  hint.id = "websites-hint";
  const error = alertText();
  error.id = "websites-error";
  form.append(labelled("Websites", field, "websites"), field, button("Show", "submit"), hint, error);
  return { form, field, error };
}

/**
 * Reads the websites of the form (or, when empty, the server's list), then the pending comments
 * of each; `focus` puts the focus on a field refused.
 */
async function useWebsites(
  form: ReturnType<typeof websitesForm>,
  admin: AdminCall,
  pending: PendingList,
  approved: ApprovedList,
  focus: boolean,
): Promise<void> {
  const { field, error } = form;
  const parsed = parseWebsites(field.value);
  if (parsed.invalid.length > 0) {
    error.textContent = `Not a website name: ${parsed.invalid.join(", ")} (1–64 characters of A-Z a-z 0-9 . _ -).`;
    field.setAttribute("aria-invalid", "true");
    if (focus) field.focus();
    return;
  }
  error.textContent = "";
  field.removeAttribute("aria-invalid");
  localStorage.setItem(WEBSITES_KEY, parsed.websites.join(" "));
  pending.websites = parsed.websites;
  if (pending.websites.length === 0) {
    const answer = await admin("/api/admin/website");
    const listed = answer.status === 200 ? websiteList(answer.body) : undefined;
    if (listed === undefined) {
      error.textContent = `The websites could not be read: ${failure(answer)}.`;
      return;
    }
    pending.websites = listed;
  }
  if (approved.websiteField.value === "") approved.websiteField.value = pending.websites[0] ?? "";
  void pending.load(false).catch(() => undefined);
}

/** Shows the moderation view of `current` in the page's view. */
export function showModeration(page: Page, current: Session): void {
  const admin = adminCalls(page, current);
  const websites = websitesForm();
  const tabs = tabList("Comments");
  const pendingTab = tabs.add("pending", "Pending");
  const approvedTab = tabs.add("approved", "Approved, by article");

  /** Runs an action on comments one by one, says what it did, and reads the lists again. */
  const act: Act = async (action, comments, row) => {
    const failures: string[] = [];
    let done = 0;
    for (const comment of comments) {
      const path = `/api/admin/comment/${encodeURIComponent(comment.website)}/${encodeURIComponent(comment.article)}/${encodeURIComponent(comment.id)}`;
      const answer = await admin(path, action === "approve" ? "POST" : "DELETE");
      if (answer.status === 200) done += 1;
      else failures.push(failure(answer));
    }
    page.notice.textContent = actionSummary(action, done, failures);
    await Promise.all([pending.load(false, row), approved.loaded ? approved.load(row) : undefined]);
  };
  const pending = pendingPanel(pendingTab, admin, page.notice, act);
  const approved = approvedPanel(approvedTab, admin, page.notice, act);

  websites.form.addEventListener("submit", (event) => {
    event.preventDefault();
    void useWebsites(websites, admin, pending, approved, true).catch(() => undefined);
  });
  page.view.replaceChildren(sessionBar(page, current), websites.form, tabs.element, ...tabs.panels);
  tabs.select(0, false);
  void useWebsites(websites, admin, pending, approved, false).catch(() => undefined);
  tabs.focusFirst();
}
