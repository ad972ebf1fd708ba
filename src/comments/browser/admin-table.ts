/**
 * The tables of comments of the moderation page: a checkbox per row, date, website, article,
 * author, comment and the row's buttons; and the "Approve selected" / "Delete selected" tools.
 */
import { button, input } from "./admin-controls.js";
import type { ModeratedComment } from "./admin-logic.js";
import { h } from "./dom.js";
import { decodeEntities } from "./widget-logic.js";

/** An action on comments. */
export type Action = "approve" | "delete";

/** What a list does with comments: approve them or delete them, then read the lists again. */
export type Act = (action: Action, comments: readonly ModeratedComment[], row: number) => Promise<void>;

/** A table of comments with a checkbox per row and its action buttons. */
export interface CommentTable {
  readonly element: HTMLElement;
  /** Shows `comments`; `focusRow` gets the focus on its checkbox (or the last row's). */
  show(comments: readonly ModeratedComment[], focusRow?: number): void;
  /** The comments whose checkbox is checked, with the index of the first. */
  selected(): { comments: ModeratedComment[]; first: number };
}

/** A shown comment and its checkbox. */
interface Row {
  readonly comment: ModeratedComment;
  readonly box: HTMLInputElement;
}

/** The `<table>` with its caption and head; `all` is the checkbox of the head. */
function tableFrame(caption: string, all: HTMLInputElement): { wrapper: HTMLElement; tbody: HTMLElement } {
  const wrapper = h("div", "table");
  const table = h("table");
  const head = h("tr");
  all.setAttribute("aria-label", "Select every comment");
  const allCell = h("th");
  allCell.append(all);
  head.append(allCell);
  for (const title of ["Date", "Website", "Article", "Author", "Comment", "Actions"]) head.append(h("th", "", title));
  for (const cell of head.children) cell.setAttribute("scope", "col");
  const thead = h("thead");
  thead.append(head);
  const tbody = h("tbody");
  table.append(h("caption", "", caption), thead, tbody);
  wrapper.append(table);
  return { wrapper, tbody };
}

/** A cell holding `child`. */
function cell(child: HTMLElement): HTMLTableCellElement {
  const td = h("td");
  td.append(child);
  return td;
}

/** The author cell: the name, and the author's website as text, not a link (a moderator reading spam should not follow it). */
function authorCell(comment: ModeratedComment, author: string): HTMLTableCellElement {
  const who = cell(h("span", "author", author));
  const website = comment["author-website"];
  if (website !== undefined) who.append(h("span", "site", website));
  return who;
}

/** The row of `comment`, the `index`-th shown, whose checkbox is `box`. */
function commentRow(comment: ModeratedComment, index: number, box: HTMLInputElement, approve: boolean, act: Act) {
  const author = decodeEntities(comment.author);
  const about = `the comment of ${author} on ${comment.website}/${comment.article}`;
  box.setAttribute("aria-label", `Select ${about}`);
  const date = new Date(comment.timestamp);
  const time = h("time", "", date.toLocaleString());
  time.dateTime = date.toISOString();
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
  const tr = h("tr");
  tr.append(
    cell(box),
    cell(time),
    h("td", "", comment.website),
    h("td", "", comment.article),
    authorCell(comment, author),
    h("td", "content", decodeEntities(comment.content)),
    actions,
  );
  return tr;
}

/**
 * A table of comments: select, date, website, article, author, comment, actions. `approve` adds
 * an Approve button per row (pending comments).
 */
export function commentTable(caption: string, approve: boolean, act: Act): CommentTable {
  const all = input("checkbox", "off");
  const { wrapper, tbody } = tableFrame(caption, all);
  let rows: Row[] = [];
  all.addEventListener("change", () => {
    for (const row of rows) row.box.checked = all.checked;
  });
  const show = (comments: readonly ModeratedComment[], focusRow?: number) => {
    all.checked = false;
    all.disabled = comments.length === 0;
    rows = [];
    tbody.replaceChildren(
      ...comments.map((comment, index) => {
        const box = input("checkbox", "off");
        box.addEventListener("change", () => {
          all.checked = rows.every((row) => row.box.checked);
        });
        rows.push({ comment, box });
        return commentRow(comment, index, box, approve, act);
      }),
    );
    if (focusRow !== undefined) (rows[Math.min(focusRow, rows.length - 1)]?.box ?? all).focus();
  };
  const selected = () => {
    const first = rows.findIndex((row) => row.box.checked);
    return { comments: rows.filter((row) => row.box.checked).map((row) => row.comment), first };
  };
  return { element: wrapper, show, selected };
}

/** The buttons acting on the selected comments of `table`; `notice` says when none is selected. */
export function bulkTools(table: CommentTable, actions: readonly Action[], notice: HTMLElement, act: Act): HTMLElement {
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
}
