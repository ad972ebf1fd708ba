/**
 * The "Pending" tab of the moderation page: the pending comments of every website moderated,
 * newest first, {@link PENDING_PAGE} per website and "show older". Those a spam check held
 * (`"spam": true`) are listed apart, in a "Spam" section under the others, each with its own
 * approve and delete buttons, so that a moderator does not approve them with the rest.
 */
import { type AdminCall, alertText, button, failure } from "./admin-controls.js";
import { type ModeratedComment, moderatedComments, newestFirst } from "./admin-logic.js";
import { type Act, bulkTools, commentTable } from "./admin-table.js";
import { h } from "./dom.js";

/** Comments per website and page of the pending list: the most the route gives. */
const PENDING_PAGE = 100;

/** The pending list. */
export interface PendingList {
  /** The websites moderated; {@link load} reads their comments. */
  websites: string[];
  /** Loads the first pages (or, `more`, the next older ones) of every website's pending comments. */
  load(more: boolean, focusRow?: number): Promise<void>;
}

/** Per website: the `before` of its next page, `undefined` for the first, or null when it has no older page. */
type Cursors = Map<string, number | undefined | null>;

/** What {@link loadPage} fills: the list of comments shown, and the errors of the reads that failed. */
interface Loaded {
  add(comments: readonly ModeratedComment[]): void;
  readonly errors: string[];
}

/** Reads the next page of `website`'s pending comments into `loaded` and moves its cursor. */
async function loadPage(admin: AdminCall, website: string, cursors: Cursors, loaded: Loaded): Promise<void> {
  const before = cursors.get(website);
  if (before === null) return;
  const query = `approved=false&limit=${PENDING_PAGE}${before === undefined ? "" : `&before=${before}`}`;
  const answer = await admin(`/api/admin/comment/${encodeURIComponent(website)}?${query}`);
  const comments = answer.status === 200 ? moderatedComments(website, answer.body) : undefined;
  if (comments === undefined) {
    loaded.errors.push(`${website}: ${failure(answer)}`);
    cursors.set(website, null);
    return;
  }
  loaded.add(comments);
  // A page ends on a whole millisecond (the route adds the ties), so `before` is exact.
  const last = comments.at(-1);
  cursors.set(website, comments.length >= PENDING_PAGE && last !== undefined ? last.timestamp : null);
}

/** The sentence under the tools: how many comments are pending, on which websites. */
function pendingSummary(websites: readonly string[], count: number, complete: boolean): string {
  if (websites.length === 0) return "No website has comments yet.";
  return `${count} pending comment${count === 1 ? "" : "s"} on ${websites.join(", ")}${complete ? "" : " (older ones not shown yet)"}.`;
}

/** The "Spam" section: a heading and a table of the comments a spam check held, hidden when none. */
function spamSection(act: Act): { section: HTMLElement; show(comments: readonly ModeratedComment[]): void } {
  const section = h("section", "spam");
  const heading = h("h2", "", "Spam");
  const table = commentTable("Comments held as spam, newest first", true, (action, comments, row) =>
    act(action, comments, row).catch(() => undefined),
  );
  section.append(heading, table.element);
  section.hidden = true;
  return {
    section,
    show(comments) {
      section.hidden = comments.length === 0;
      table.show(comments);
    },
  };
}

/** Fills `panel` with the pending list: its tools, status, errors, table and "show older". */
export function pendingPanel(panel: HTMLElement, admin: AdminCall, notice: HTMLElement, act: Act): PendingList {
  const table = commentTable("Pending comments, newest first", true, (action, comments, row) =>
    act(action, comments, row).catch(() => undefined),
  );
  const status = h("p", "hint");
  const errorText = alertText();
  const older = button("Show older pending comments");
  older.hidden = true;
  const refresh = button("Refresh");
  const tools = bulkTools(table, ["approve", "delete"], notice, act);
  tools.append(refresh);
  const spam = spamSection(act);
  panel.append(tools, status, errorText, table.element, older, spam.section);

  let pending: ModeratedComment[] = [];
  let cursors: Cursors = new Map();
  /** Loads started: one overtaken by a later load shows nothing (both would fill the same list). */
  let started = 0;
  const list: PendingList = {
    websites: [],
    async load(more, focusRow) {
      const load = ++started;
      // Each load reads into a list and cursors of its own, and only the latest one started is shown.
      const read: ModeratedComment[] = more ? [...pending] : [];
      const reading: Cursors = more ? new Map(cursors) : new Map(list.websites.map((website) => [website, undefined]));
      const loaded: Loaded = { add: (comments) => read.push(...comments), errors: [] };
      await Promise.all([...reading.keys()].map((website) => loadPage(admin, website, reading, loaded)));
      if (load !== started) return;
      pending = read;
      cursors = reading;
      pending.sort(newestFirst);
      table.show(
        pending.filter((comment) => comment.spam !== true),
        focusRow,
      );
      spam.show(pending.filter((comment) => comment.spam === true));
      older.hidden = ![...cursors.values()].some((cursor) => cursor !== null);
      errorText.textContent = loaded.errors.join(". ");
      status.textContent = pendingSummary(list.websites, pending.length, older.hidden);
    },
  };
  older.addEventListener("click", () => list.load(true).catch(() => undefined));
  refresh.addEventListener("click", async () => {
    try {
      await list.load(false);
      notice.textContent = "Pending comments read again.";
    } catch {
      // Signed out: the sign-in form says why.
    }
  });
  return list;
}
