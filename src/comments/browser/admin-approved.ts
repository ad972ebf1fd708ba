/** The "Approved, by article" tab of the moderation page: the approved comments of one article. */
import { type AdminCall, alertText, button, failure, input, labelled } from "./admin-controls.js";
import { isWebsiteName, moderatedComments, newestFirst } from "./admin-logic.js";
import { type Act, bulkTools, commentTable } from "./admin-table.js";
import { h } from "./dom.js";
import { isArticleName } from "./widget-logic.js";

/** The approved list of an article. */
export interface ApprovedList {
  /** Whether an article was chosen (and its list shown). */
  readonly loaded: boolean;
  /** Reads the list of the chosen article again. */
  load(focusRow?: number): Promise<void>;
  /** The website field of the form, which the moderation view fills with the first website. */
  readonly websiteField: HTMLInputElement;
}

/** The form choosing the article, with its two fields. */
function articleForm(): { form: HTMLFormElement; websiteField: HTMLInputElement; articleField: HTMLInputElement } {
  const form = h("form", "article");
  const websiteField = input("text", "off");
  const articleField = input("text", "off");
  websiteField.required = true;
  articleField.required = true;
  form.append(
    labelled("Website", websiteField, "approved-website"),
    websiteField,
    labelled("Article", articleField, "approved-article"),
    articleField,
    button("Show", "submit"),
  );
  return { form, websiteField, articleField };
}

/** Fills `panel` with the approved list: the article form, its error, the tools and the table. */
export function approvedPanel(panel: HTMLElement, admin: AdminCall, notice: HTMLElement, act: Act): ApprovedList {
  const { form, websiteField, articleField } = articleForm();
  const articleError = alertText();
  const table = commentTable("Approved comments, newest first", false, (action, comments, row) =>
    act(action, comments, row).catch(() => undefined),
  );
  panel.append(form, articleError, bulkTools(table, ["delete"], notice, act), table.element);
  const chosen = { website: "", article: "" };
  /** Loads started: an answer that a later load's request overtook is not shown over it. */
  let started = 0;
  const list = {
    loaded: false,
    websiteField,
    async load(focusRow?: number) {
      const load = ++started;
      const { website, article } = chosen;
      const answer = await admin(`/api/admin/comment/${encodeURIComponent(website)}/${encodeURIComponent(article)}`);
      if (load !== started) return;
      const comments = answer.status === 200 ? moderatedComments(website, answer.body, article) : undefined;
      articleError.textContent = comments === undefined ? failure(answer) : "";
      table.show((comments ?? []).filter((comment) => comment.approved).sort(newestFirst), focusRow);
    },
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const website = websiteField.value.trim();
    const article = articleField.value.trim();
    if (!isWebsiteName(website) || !isArticleName(article)) {
      articleError.textContent =
        "A website is 1–64 characters of A-Z a-z 0-9 . _ - and an article 1–200 of A-Z a-z 0-9 . _ ~ -.";
      return;
    }
    Object.assign(chosen, { website, article });
    list.loaded = true;
    void list.load().catch(() => undefined);
  });
  return list;
}
