/**
 * The comment widget a static site embeds (comments.md §9), bundled by esbuild into
 * `dist/comments/browser/widget.js` and served at `/comments/widget.js`:
 *
 * ```html
 * <script src="https://comments.example.org/comments/widget.js" data-website="blog" defer></script>
 * ```
 *
 * Attributes of its `<script>`: `data-website` (required); `data-article` (default: the page's path
 * reduced by {@link articleFromPath}: `/posts/my-post/` → `posts-my-post`); `data-target` (a CSS
 * selector; default: a `<div>` inserted after the script; a selector that selects nothing renders
 * no widget, which an index page uses to get only its counts); `data-lang` (`en` or `fr`);
 * `data-api` (the Vigie base URL; default: the script's own origin).
 *
 * It lists the approved comments, newest 50 first then "show older", the count as heading, and a
 * form whose question is fetched when the form is first focused. It fills every
 * `[data-vigie-count="<article>"]` element of the page with one call of the count route. Comment
 * text is decoded from its stored HTML escaping and set as `textContent`: never parsed as HTML.
 */
import { h, request } from "./dom.js";
import {
  articleFromPath,
  authorHref,
  type Challenge,
  type Comment,
  decodeEntities,
  errorOf,
  type FormField,
  isArticleName,
  isChallenge,
  isCommentList,
  isPosted,
  nextPage,
  pageQuery,
  placeError,
} from "./widget-logic.js";
import { countText, type Lang, langOf, questionText, STRINGS } from "./widget-strings.js";
import { WIDGET_CSS } from "./widget-style.js";

/** What one widget works with. */
interface Settings {
  /** `<base URL>/api/v1/`. */
  readonly api: string;
  /** Percent-encoded for paths. */
  readonly website: string;
  readonly article: string;
  readonly lang: Lang;
}

/** A form field with its label and its error message. */
interface Field {
  readonly control: HTMLInputElement | HTMLTextAreaElement;
  readonly label: HTMLLabelElement;
  readonly error: HTMLParagraphElement;
}

/** The most articles the count route takes per call (comments.md §9). */
const COUNT_BATCH = 100;

/** Numbers the widgets of a page, for unique element ids. */
let instances = 0;

/**
 * Fills every `[data-vigie-count]` element with the count of its article, one call of the count
 * route per 100 articles, `extra` included.
 * @returns the counts that the route gave
 */
async function fillCounts(settings: Settings, extra: readonly string[]): Promise<Map<string, number>> {
  const elements = [...document.querySelectorAll<HTMLElement>("[data-vigie-count]")];
  // A name the route would refuse (400) would fail the whole call: it is left out, and its
  // element keeps its text.
  const articles = [...new Set([...extra, ...elements.map((element) => element.dataset.vigieCount ?? "")])].filter(
    isArticleName,
  );
  const counts = new Map<string, number>();
  for (let start = 0; start < articles.length; start += COUNT_BATCH) {
    const query = articles
      .slice(start, start + COUNT_BATCH)
      .map((article) => `article=${encodeURIComponent(article)}`)
      .join("&");
    const { body } = await request(`${settings.api}count/${settings.website}?${query}`);
    if (typeof body !== "object" || body === null) continue;
    for (const [article, count] of Object.entries(body)) {
      if (typeof count === "number") counts.set(article, count);
    }
  }
  for (const element of elements) {
    const count = counts.get(element.dataset.vigieCount ?? "");
    if (count !== undefined) element.textContent = countText(settings.lang, count);
  }
  return counts;
}

/** Builds the widget into `target` and loads its comments. */
function render(target: Element, settings: Settings): void {
  const { lang, article } = settings;
  const text = STRINGS[lang];
  const id = `vigie${++instances}`;
  const comments = `${settings.api}comment/${settings.website}/${encodeURIComponent(article)}`;

  const root = h("section", "vigie");
  root.lang = lang;
  root.setAttribute("aria-labelledby", `${id}-h`);
  const heading = h("h2", "", text.title);
  heading.id = `${id}-h`;
  // Load failures of the list, announced.
  const note = h("p");
  note.setAttribute("role", "status");
  const older = h("button", "v-o", text.older);
  older.type = "button";
  older.hidden = true;
  const list = h("ol");
  // Takes the focus when "show older" goes away under it, so a keyboard user keeps their place.
  list.tabIndex = -1;
  const form = h("form");

  const field = (name: FormField, label: string, control: HTMLInputElement | HTMLTextAreaElement, max: number) => {
    const fieldId = `${id}-${name}`;
    const labelElement = h("label", "", label);
    labelElement.htmlFor = fieldId;
    control.id = fieldId;
    control.name = name;
    control.maxLength = max;
    control.required = name !== "author-website";
    const error = h("p", "v-e");
    error.id = `${fieldId}-e`;
    error.setAttribute("aria-live", "polite");
    control.setAttribute("aria-describedby", error.id);
    form.append(labelElement, control, error);
    return { control, label: labelElement, error };
  };
  // The limits of comments.md §5, so that the browser stops what the server would refuse.
  const fields: Record<FormField, Field> = {
    author: field("author", text.name, h("input"), 100),
    "author-website": field("author-website", text.website, h("input"), 200),
    content: field("content", text.comment, h("textarea"), 10_000),
    answer: field("answer", text.question, h("input"), 64),
  };
  const { author, content, answer } = fields;
  const website = fields["author-website"].control;
  author.control.autocomplete = "name";
  website.setAttribute("autocomplete", "url");
  website.inputMode = "url";
  answer.control.autocomplete = "off";
  if (content.control instanceof HTMLTextAreaElement) content.control.rows = 5;
  const send = h("button", "", text.send);
  const status = h("p");
  status.setAttribute("role", "status");
  form.append(send, status);
  root.append(heading, note, older, list, form);
  target.append(root);

  const item = (comment: Comment): HTMLLIElement => {
    const href = authorHref(comment["author-website"]);
    const name = decodeEntities(comment.author);
    let who: HTMLElement;
    if (href === undefined) who = h("strong", "", name);
    else {
      const link = h("a", "", name);
      link.href = href;
      link.rel = "nofollow ugc noopener";
      who = link;
    }
    const date = new Date(comment.timestamp);
    // The visitor's locale, whatever the widget's language: it is their clock.
    const time = h("time", "", date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }));
    time.dateTime = date.toISOString();
    const head = h("p");
    head.append(who, " ", time);
    const li = h("li");
    li.append(head, h("p", "v-c", decodeEntities(comment.content)));
    return li;
  };

  let shown: Comment[] = [];
  /** Loads the next older page (or the first) and shows it above the comments shown. */
  const page = async (): Promise<void> => {
    const { body } = await request(`${comments}?${pageQuery(shown)}`);
    if (!isCommentList(body)) {
      note.textContent = errorOf(body) ?? text.offline;
      return;
    }
    const { fresh, more } = nextPage(body, shown);
    shown = [...fresh, ...shown];
    list.prepend(...fresh.map(item));
    older.hidden = !more;
  };
  /** Loads the newest page and every count of the page, from scratch. */
  const load = async (): Promise<readonly Comment[]> => {
    shown = [];
    list.replaceChildren();
    note.textContent = "";
    const [counts] = await Promise.all([fillCounts(settings, [article]), page()]);
    const count = counts.get(article) ?? (older.hidden ? shown.length : undefined);
    heading.textContent = count === undefined ? text.title : countText(lang, count);
    return shown;
  };
  let paging = false;
  older.addEventListener("click", async () => {
    // A second click while a page loads would load it twice.
    if (paging) return;
    paging = true;
    await page();
    paging = false;
    if (older.hidden) list.focus();
  });

  const showError = (target: Field, message: string) => {
    target.error.textContent = message;
    target.control.setAttribute("aria-invalid", String(message !== ""));
  };

  let challenge: Challenge | undefined;
  let asking: Promise<void> | undefined;
  /** Fetches a question (once at a time); a failure is shown beside the answer. */
  const ask = (): Promise<void> =>
    (asking ??= (async () => {
      const { body } = await request(`${settings.api}challenge/${settings.website}/${encodeURIComponent(article)}`, {
        cache: "no-store",
      });
      if (isChallenge(body)) {
        challenge = body;
        answer.label.textContent = questionText(lang, body.question);
      } else showError(answer, errorOf(body) ?? text.offline);
      asking = undefined;
    })());
  form.addEventListener("focusin", () => {
    if (challenge === undefined) void ask();
  });

  const post = async (): Promise<void> => {
    const asked = challenge;
    if (asked === undefined) {
      // Only when the first fetch failed: show the question now, to be answered.
      status.textContent = "";
      await ask();
      answer.control.focus();
      return;
    }
    const fieldsSent: Record<string, string | number> = {
      author: author.control.value,
      content: content.control.value,
      answer: answer.control.value,
      signature: asked.signature,
      timestamp: asked.timestamp,
    };
    if (website.value.trim() !== "") fieldsSent["author-website"] = website.value.trim();
    const { status: code, body } = await request(comments, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(fieldsSent),
    });
    if (code === 201) {
      challenge = undefined;
      answer.label.textContent = text.question;
      const listed = await load();
      const published = listed.some((comment) =>
        isPosted(comment, author.control.value, content.control.value, asked.timestamp),
      );
      content.control.value = "";
      answer.control.value = "";
      status.textContent = published ? text.published : text.pending;
      return;
    }
    // The text typed stays in the form whatever went wrong.
    status.textContent = "";
    const placed = placeError(errorOf(body) ?? (code === 0 ? text.offline : `HTTP ${code}`));
    if (placed.renew) {
      challenge = undefined;
      answer.control.value = "";
      void ask();
    }
    if (placed.field === undefined) status.textContent = placed.text;
    else {
      showError(fields[placed.field], placed.text);
      fields[placed.field].control.focus();
    }
  };

  let busy = false;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (busy) return;
    busy = true;
    // aria-disabled rather than disabled: a disabled button loses the keyboard focus.
    send.setAttribute("aria-disabled", "true");
    for (const each of Object.values(fields)) showError(each, "");
    status.textContent = text.sending;
    try {
      await post();
    } finally {
      busy = false;
      send.removeAttribute("aria-disabled");
    }
  });

  void load();
}

/** Reads the script's attributes, injects the style once, renders the widget and fills the counts. */
function start(script: HTMLScriptElement): void {
  const data = script.dataset;
  if (!data.website) {
    console.error("vigie: the comment widget's <script> needs a data-website attribute");
    return;
  }
  const settings: Settings = {
    api: `${(data.api || new URL(script.src, location.href).origin).replace(/\/+$/, "")}/api/v1/`,
    website: encodeURIComponent(data.website),
    article: data.article || articleFromPath(location.pathname),
    lang: langOf(data.lang),
  };
  let target: Element | null;
  if (data.target) target = document.querySelector(data.target);
  else {
    target = h("div");
    script.after(target);
  }
  if (target === null) {
    void fillCounts(settings, []);
    return;
  }
  if (document.getElementById("vigie-style") === null) {
    const style = h("style", "", WIDGET_CSS);
    style.id = "vigie-style";
    document.head.append(style);
  }
  render(target, settings);
}

// `currentScript` is this script while it runs, `defer` or not (not for modules, which it is not).
const script = document.currentScript;
if (script instanceof HTMLScriptElement) start(script);
