/**
 * The moderation page's script (comments.md §10), bundled by esbuild into
 * `dist/comments/browser/admin.js` (and its style, admin.css, into `admin.css`), loaded by the
 * page the server renders at `/comments/admin` (src/comments/admin-page.ts), which it fills: the
 * `<main id="moderation">`.
 *
 * - Sign-in with the comments admin token, or with a registry user name and password exchanged for
 *   a registry token `comments-admin-<random>` valid one day (POST /api/v1/registry/token); the
 *   token is kept in `sessionStorage`, never in a cookie, and a registry token is deleted on
 *   sign-out (DELETE /api/v1/registry/token/<name>). Either is checked at once against an admin
 *   route, so a wrong token or a user who is not an admin is told so at sign-in.
 * - The websites moderated are every website the server lists (GET /api/admin/website: the
 *   configured ones, or in open mode those holding comments), or those typed in the "Websites"
 *   field (space-separated, kept in `localStorage`: they are no secret).
 * - A "Pending" tab lists the pending comments of every website, newest first, 100 per website and
 *   "show older"; an "Approved" tab lists the approved comments of one article. Each comment is
 *   approved or deleted with one click, or several at once through their checkboxes. After every
 *   change the lists are read again from the API (`cache: "no-store"`): no copy is trusted.
 *
 * Comment text is decoded from its stored HTML escaping and set as `textContent`, never parsed.
 */
import "./admin.css";
import {
  actionSummary,
  isWebsiteName,
  type ModeratedComment,
  moderatedComments,
  newestFirst,
  parseSession,
  parseWebsites,
  SESSION_KEY,
  type Session,
  TOKEN_VALIDITY_DAYS,
  tokenName,
  WEBSITES_KEY,
  websiteList,
} from "./admin-logic.js";
import { h, request } from "./dom.js";
import { decodeEntities, errorOf, isArticleName } from "./widget-logic.js";

/** Comments per website and page of the pending list: the most the route gives. */
const PENDING_PAGE = 100;

/** The sentence of a failed request: the server's, else its status. */
function failure(answer: { status: number; body: unknown }): string {
  if (answer.status === 0) return "The server cannot be reached";
  return errorOf(answer.body) ?? `HTTP status ${answer.status}`;
}

/** A `<label>` for `control`, whose id it sets. */
function labelled(text: string, control: HTMLInputElement, id: string): HTMLLabelElement {
  control.id = id;
  const label = h("label", "", text);
  label.htmlFor = id;
  return label;
}

/** A text `<input>` of `type`, with its `autocomplete`. */
function input(type: string, autocomplete: string): HTMLInputElement {
  const element = h("input");
  element.type = type;
  element.setAttribute("autocomplete", autocomplete);
  return element;
}

/** A `<button>` of `type` with its text, and an accessible name when the text alone is not enough. */
function button(text: string, type: "button" | "submit" = "button", label?: string): HTMLButtonElement {
  const element = h("button", "", text);
  element.type = type;
  if (label !== undefined) element.setAttribute("aria-label", label);
  return element;
}

/** A table of comments with a checkbox per row and its action buttons. */
interface CommentTable {
  readonly element: HTMLElement;
  /** Shows `comments`; `focusRow` gets the focus on its checkbox (or the last row's). */
  show(comments: readonly ModeratedComment[], focusRow?: number): void;
  /** The comments whose checkbox is checked, with the index of the first. */
  selected(): { comments: ModeratedComment[]; first: number };
}

/** What a list does with comments: approve them or delete them, then read the lists again. */
type Act = (action: "approve" | "delete", comments: readonly ModeratedComment[], row: number) => Promise<void>;

/**
 * A table of comments: select, date, website, article, author, comment, actions. `approve` adds
 * an Approve button per row (pending comments).
 */
function commentTable(caption: string, approve: boolean, act: Act): CommentTable {
  const wrapper = h("div", "table");
  const table = h("table");
  const captionElement = h("caption", "", caption);
  const head = h("tr");
  const all = input("checkbox", "off");
  all.setAttribute("aria-label", "Select every comment");
  const allCell = h("th");
  allCell.append(all);
  head.append(allCell);
  for (const title of ["Date", "Website", "Article", "Author", "Comment", "Actions"]) head.append(h("th", "", title));
  for (const cell of head.children) cell.setAttribute("scope", "col");
  const thead = h("thead");
  thead.append(head);
  const tbody = h("tbody");
  table.append(captionElement, thead, tbody);
  wrapper.append(table);

  let rows: { comment: ModeratedComment; box: HTMLInputElement }[] = [];
  all.addEventListener("change", () => {
    for (const row of rows) row.box.checked = all.checked;
  });

  return {
    element: wrapper,
    show(comments, focusRow) {
      all.checked = false;
      all.disabled = comments.length === 0;
      rows = [];
      tbody.replaceChildren(
        ...comments.map((comment, index) => {
          const author = decodeEntities(comment.author);
          const about = `the comment of ${author} on ${comment.website}/${comment.article}`;
          const box = input("checkbox", "off");
          box.setAttribute("aria-label", `Select ${about}`);
          box.addEventListener("change", () => {
            all.checked = rows.every((row) => row.box.checked);
          });
          rows.push({ comment, box });
          const date = new Date(comment.timestamp);
          const time = h("time", "", date.toLocaleString());
          time.dateTime = date.toISOString();
          const who = h("td");
          who.append(h("span", "author", author));
          const website = comment["author-website"];
          // The author's website as text, not a link: a moderator reading spam should not follow it.
          if (website !== undefined) who.append(h("span", "site", website));
          const actions = h("td", "actions");
          if (approve) {
            const approveButton = button("Approve", "button", `Approve ${about}`);
            approveButton.addEventListener("click", () => act("approve", [comment], index));
            actions.append(approveButton);
          }
          const deleteButton = button("Delete", "button", `Delete ${about}`);
          deleteButton.className = "danger";
          deleteButton.addEventListener("click", () => act("delete", [comment], index));
          actions.append(deleteButton);
          const select = h("td");
          select.append(box);
          const dateCell = h("td");
          dateCell.append(time);
          const tr = h("tr");
          tr.append(
            select,
            dateCell,
            h("td", "", comment.website),
            h("td", "", comment.article),
            who,
            h("td", "content", decodeEntities(comment.content)),
            actions,
          );
          return tr;
        }),
      );
      if (focusRow !== undefined) (rows[Math.min(focusRow, rows.length - 1)]?.box ?? all).focus();
    },
    selected() {
      const first = rows.findIndex((row) => row.box.checked);
      return { comments: rows.filter((row) => row.box.checked).map((row) => row.comment), first };
    },
  };
}

/** Builds the page into `main`. */
function start(main: HTMLElement): void {
  // What the page did, announced: sign-in, sign-out, approvals and deletions.
  const notice = h("p", "notice");
  notice.setAttribute("role", "status");
  const view = h("div");
  main.replaceChildren(notice, view);

  let session = parseSession(sessionStorage.getItem(SESSION_KEY));

  /** An admin or registry call with the session's token, never from a cache. */
  const call = (path: string, token: string, init: RequestInit = {}) =>
    request(path, { ...init, cache: "no-store", headers: { ...init.headers, authorization: `Bearer ${token}` } });

  /**
   * Whether `token` opens the admin routes: undefined when it does, else why not (the comments
   * admin token cannot be checked otherwise than by using it).
   */
  const refusal = async (token: string): Promise<string | undefined> => {
    const answer = await call("/api/admin/website", token);
    return answer.status === 200 ? undefined : failure(answer);
  };

  const signIn = (message = "") => {
    session = undefined;
    sessionStorage.removeItem(SESSION_KEY);
    notice.textContent = message;
    const section = h("section", "signin");
    const heading = h("h2", "", "Sign in");
    const error = h("p", "error");
    error.setAttribute("role", "alert");

    const tokenForm = h("form");
    const token = input("password", "off");
    token.required = true;
    tokenForm.append(
      h("h3", "", "With the comments admin token"),
      labelled("Admin token", token, "token"),
      token,
      button("Sign in with the token", "submit"),
    );

    const userForm = h("form");
    const user = input("text", "username");
    user.required = true;
    const password = input("password", "current-password");
    password.required = true;
    userForm.append(
      h("h3", "", "With a registry account"),
      labelled("User name", user, "user"),
      user,
      labelled("Password", password, "password"),
      password,
      button("Sign in", "submit"),
    );
    section.append(heading, tokenForm, userForm, error);
    view.replaceChildren(section);
    token.focus();

    let busy = false;
    const signedIn = (signed: Session) => {
      session = signed;
      sessionStorage.setItem(SESSION_KEY, JSON.stringify(signed));
      notice.textContent =
        signed.user === undefined ? "Signed in with the admin token." : `Signed in as ${signed.user}.`;
      moderate();
    };

    tokenForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (busy) return;
      busy = true;
      error.textContent = "";
      const value = token.value.trim();
      const refused = await refusal(value);
      busy = false;
      if (refused !== undefined) {
        error.textContent = `Sign-in refused: ${refused}.`;
        token.focus();
        return;
      }
      signedIn({ token: value });
    });

    userForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (busy) return;
      busy = true;
      error.textContent = "";
      const name = tokenName(crypto.getRandomValues(new Uint8Array(8)));
      const answer = await request("/api/v1/registry/token", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name, user: user.value, password: password.value, validity: TOKEN_VALIDITY_DAYS }),
      });
      password.value = "";
      const created: unknown = answer.status === 201 ? Reflect.get(Object(answer.body), "token") : undefined;
      if (typeof created !== "string") {
        busy = false;
        error.textContent = `Sign-in refused: ${failure(answer)}.`;
        password.focus();
        return;
      }
      const refused = await refusal(created);
      busy = false;
      if (refused !== undefined) {
        // Not an admin (403 forbidden): the token is of no use here, so it goes at once.
        await call(`/api/v1/registry/token/${encodeURIComponent(name)}`, created, { method: "DELETE" });
        error.textContent = `Sign-in refused: ${refused}${refused === "forbidden" ? " (only admins moderate comments)" : ""}.`;
        user.focus();
        return;
      }
      signedIn({ token: created, user: user.value, tokenName: name });
    });
  };

  /** Ends the session, deleting its registry token when the page created one. */
  const signOut = async (current: Session) => {
    let message = "Signed out.";
    if (current.tokenName !== undefined) {
      const answer = await call(`/api/v1/registry/token/${encodeURIComponent(current.tokenName)}`, current.token, {
        method: "DELETE",
      });
      // 401: the token already expired or was deleted elsewhere; nothing is left to delete.
      if (answer.status !== 200 && answer.status !== 401) {
        message = `Signed out, but the registry token ${current.tokenName} could not be deleted (${failure(answer)}); it expires within a day.`;
      }
    }
    signIn(message);
  };

  const moderate = () => {
    const current = session;
    if (current === undefined) return signIn();
    /** An admin call; a 401 ends the session (expired or deleted token) and throws, to stop the caller. */
    const admin = async (path: string, method = "GET") => {
      const answer = await call(path, current.token, { method });
      if (answer.status === 401) {
        signIn(`Signed out: ${failure(answer)}. Sign in again.`);
        throw new Error("signed out");
      }
      return answer;
    };

    const bar = h("div", "bar");
    const who = h(
      "p",
      "",
      current.user === undefined
        ? "Session: the comments admin token."
        : `Session: ${current.user}, with the registry token ${current.tokenName ?? ""} (valid one day).`,
    );
    const out = button("Sign out");
    out.addEventListener("click", () => signOut(current));
    bar.append(who, out);

    // The websites: every one the server lists, or those typed here (kept in this browser).
    const websitesForm = h("form", "websites");
    const websitesInput = input("text", "off");
    websitesInput.value = localStorage.getItem(WEBSITES_KEY) ?? "";
    websitesInput.placeholder = "all";
    websitesInput.setAttribute("aria-describedby", "websites-hint websites-error");
    const hint = h(
      "p",
      "hint",
      "Empty: every website. Or the names of the websites to moderate (the data-website of their widget), separated by spaces; kept in this browser.",
    );
    hint.id = "websites-hint";
    const websitesError = h("p", "error");
    websitesError.id = "websites-error";
    websitesError.setAttribute("role", "alert");
    websitesForm.append(
      labelled("Websites", websitesInput, "websites"),
      websitesInput,
      button("Show", "submit"),
      hint,
      websitesError,
    );

    // Tabs (WAI-ARIA Authoring Practices, tabs with automatic activation).
    const tabs = h("div", "tabs");
    tabs.setAttribute("role", "tablist");
    tabs.setAttribute("aria-label", "Comments");
    const panels: HTMLElement[] = [];
    const tabButtons: HTMLButtonElement[] = [];
    const select = (index: number, focus: boolean) => {
      tabButtons.forEach((tab, each) => {
        tab.setAttribute("aria-selected", String(each === index));
        tab.tabIndex = each === index ? 0 : -1;
        const panel = panels[each];
        if (panel !== undefined) panel.hidden = each !== index;
      });
      if (focus) tabButtons[index]?.focus();
    };
    const addTab = (id: string, title: string): HTMLElement => {
      const index = tabButtons.length;
      const tab = button(title);
      tab.id = `tab-${id}`;
      tab.setAttribute("role", "tab");
      tab.setAttribute("aria-controls", `panel-${id}`);
      tab.addEventListener("click", () => select(index, false));
      tab.addEventListener("keydown", (event) => {
        const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
        const to = event.key === "Home" ? 0 : event.key === "End" ? -1 : undefined;
        if (step === undefined && to === undefined) return;
        event.preventDefault();
        const count = tabButtons.length;
        select(((to ?? index + (step ?? 0)) + count) % count, true);
      });
      const panel = h("section", "panel");
      panel.id = `panel-${id}`;
      panel.setAttribute("role", "tabpanel");
      panel.setAttribute("aria-labelledby", tab.id);
      tabButtons.push(tab);
      panels.push(panel);
      tabs.append(tab);
      return panel;
    };

    const pendingPanel = addTab("pending", "Pending");
    const approvedPanel = addTab("approved", "Approved, by article");

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
      notice.textContent = actionSummary(action, done, failures);
      await Promise.all([loadPending(false, row), approved.loaded ? loadApproved(row) : undefined]);
    };

    // Pending comments of every website, newest first.
    const pendingTable = commentTable("Pending comments, newest first", true, (action, comments, row) =>
      act(action, comments, row).catch(() => undefined),
    );
    const pendingStatus = h("p", "hint");
    const pendingErrors = h("p", "error");
    pendingErrors.setAttribute("role", "alert");
    const older = button("Show older pending comments");
    older.hidden = true;
    const bulk = (table: CommentTable, actions: readonly ("approve" | "delete")[]) => {
      const tools = h("div", "tools");
      for (const action of actions) {
        const text = action === "approve" ? "Approve selected" : "Delete selected";
        const each = button(text);
        if (action === "delete") each.className = "danger";
        each.addEventListener("click", () => {
          const { comments, first } = table.selected();
          if (comments.length === 0) notice.textContent = "Select comments first, with their checkboxes.";
          else void act(action, comments, first).catch(() => undefined);
        });
        tools.append(each);
      }
      return tools;
    };
    const refresh = button("Refresh");
    const pendingTools = bulk(pendingTable, ["approve", "delete"]);
    pendingTools.append(refresh);
    pendingPanel.append(pendingTools, pendingStatus, pendingErrors, pendingTable.element, older);

    let websites: string[] = [];
    let pending: ModeratedComment[] = [];
    /** Per website: the `before` of its next page, or null when it has no older page. */
    let cursors = new Map<string, number | undefined | null>();
    /** Loads the first pages (or, `more`, the next older ones) of every website's pending comments. */
    const loadPending = async (more: boolean, focusRow?: number) => {
      if (!more) {
        pending = [];
        cursors = new Map(websites.map((website) => [website, undefined]));
      }
      const errors: string[] = [];
      await Promise.all(
        [...cursors].map(async ([website, before]) => {
          if (before === null) return;
          const query = `approved=false&limit=${PENDING_PAGE}${before === undefined ? "" : `&before=${before}`}`;
          const answer = await admin(`/api/admin/comment/${encodeURIComponent(website)}?${query}`);
          const comments = answer.status === 200 ? moderatedComments(website, answer.body) : undefined;
          if (comments === undefined) {
            errors.push(`${website}: ${failure(answer)}`);
            cursors.set(website, null);
            return;
          }
          pending.push(...comments);
          // A page ends on a whole millisecond (the route adds the ties), so `before` is exact.
          const last = comments.at(-1);
          cursors.set(website, comments.length >= PENDING_PAGE && last !== undefined ? last.timestamp : null);
        }),
      );
      pending.sort(newestFirst);
      pendingTable.show(pending, focusRow);
      older.hidden = ![...cursors.values()].some((cursor) => cursor !== null);
      pendingErrors.textContent = errors.join(". ");
      pendingStatus.textContent =
        websites.length === 0
          ? "No website has comments yet."
          : `${pending.length} pending comment${pending.length === 1 ? "" : "s"} on ${websites.join(", ")}${older.hidden ? "" : " (older ones not shown yet)"}.`;
    };
    older.addEventListener("click", () => loadPending(true).catch(() => undefined));
    refresh.addEventListener("click", async () => {
      try {
        await loadPending(false);
        notice.textContent = "Pending comments read again.";
      } catch {
        // Signed out: the sign-in form says why.
      }
    });

    // Approved comments of one article.
    const articleForm = h("form", "article");
    const websiteField = input("text", "off");
    const articleField = input("text", "off");
    websiteField.required = true;
    articleField.required = true;
    const articleError = h("p", "error");
    articleError.setAttribute("role", "alert");
    articleForm.append(
      labelled("Website", websiteField, "approved-website"),
      websiteField,
      labelled("Article", articleField, "approved-article"),
      articleField,
      button("Show", "submit"),
    );
    const approvedTable = commentTable("Approved comments, newest first", false, (action, comments, row) =>
      act(action, comments, row).catch(() => undefined),
    );
    approvedPanel.append(articleForm, articleError, bulk(approvedTable, ["delete"]), approvedTable.element);
    const approved = { loaded: false, website: "", article: "" };
    const loadApproved = async (focusRow?: number) => {
      const { website, article } = approved;
      const answer = await admin(`/api/admin/comment/${encodeURIComponent(website)}/${encodeURIComponent(article)}`);
      const comments = answer.status === 200 ? moderatedComments(website, answer.body, article) : undefined;
      articleError.textContent = comments === undefined ? failure(answer) : "";
      approvedTable.show((comments ?? []).filter((comment) => comment.approved).sort(newestFirst), focusRow);
    };
    articleForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const website = websiteField.value.trim();
      const article = articleField.value.trim();
      const invalid = !isWebsiteName(website) || !isArticleName(article);
      if (invalid) {
        articleError.textContent =
          "A website is 1–64 characters of A-Z a-z 0-9 . _ - and an article 1–200 of A-Z a-z 0-9 . _ ~ -.";
        return;
      }
      Object.assign(approved, { loaded: true, website, article });
      void loadApproved().catch(() => undefined);
    });

    const useWebsites = async (focus: boolean) => {
      const parsed = parseWebsites(websitesInput.value);
      if (parsed.invalid.length > 0) {
        websitesError.textContent = `Not a website name: ${parsed.invalid.join(", ")} (1–64 characters of A-Z a-z 0-9 . _ -).`;
        websitesInput.setAttribute("aria-invalid", "true");
        if (focus) websitesInput.focus();
        return;
      }
      websitesError.textContent = "";
      websitesInput.removeAttribute("aria-invalid");
      localStorage.setItem(WEBSITES_KEY, parsed.websites.join(" "));
      websites = parsed.websites;
      if (websites.length === 0) {
        const answer = await admin("/api/admin/website");
        const listed = answer.status === 200 ? websiteList(answer.body) : undefined;
        if (listed === undefined) {
          websitesError.textContent = `The websites could not be read: ${failure(answer)}.`;
          return;
        }
        websites = listed;
      }
      if (websiteField.value === "") websiteField.value = websites[0] ?? "";
      void loadPending(false).catch(() => undefined);
    };
    websitesForm.addEventListener("submit", (event) => {
      event.preventDefault();
      void useWebsites(true).catch(() => undefined);
    });

    view.replaceChildren(bar, websitesForm, tabs, ...panels);
    select(0, false);
    void useWebsites(false).catch(() => undefined);
    tabButtons[0]?.focus();
  };

  if (session === undefined) signIn();
  else moderate();
}

const main = document.getElementById("moderation");
if (main !== null) start(main);
