/**
 * The comment widget a static site embeds, bundled by esbuild into
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
  type ThreadLine,
  threadLines,
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

/** The most articles the count route takes per call. */
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

/** The elements of one widget. */
interface View {
  readonly root: HTMLElement;
  readonly heading: HTMLElement;
  /** Load failures of the list, announced. */
  readonly note: HTMLElement;
  readonly older: HTMLButtonElement;
  readonly list: HTMLOListElement;
  readonly form: HTMLFormElement;
  readonly fields: Record<FormField, Field>;
  /** "Notify me of replies". */
  readonly notify: HTMLInputElement;
  /** The honeypot `homepage`, hidden from people: a robot that fills it is dropped by the server. */
  readonly trap: HTMLInputElement;
  readonly send: HTMLButtonElement;
  /** What became of the comment sent, announced. */
  readonly status: HTMLElement;
  readonly lang: Lang;
  /** The comment the form answers (its `parent`) and its "Reply" button, while the form is under it. */
  replying?: Replying | undefined;
}

/** The comment the form answers: its id, its list item and its button. */
interface Replying {
  readonly id: string;
  readonly li: HTMLLIElement;
  readonly button: HTMLButtonElement;
}

/** Appends to `form` a field `name` of widget `id`: its label, its control and its error. */
function field(
  form: HTMLFormElement,
  id: string,
  name: FormField,
  label: string,
  control: HTMLInputElement | HTMLTextAreaElement,
  max: number,
): Field {
  const fieldId = `${id}-${name}`;
  const labelElement = h("label", "", label);
  labelElement.htmlFor = fieldId;
  control.id = fieldId;
  control.name = name;
  control.maxLength = max;
  control.required = name !== "author-website" && name !== "email";
  const error = h("p", "v-e");
  error.id = `${fieldId}-e`;
  error.setAttribute("aria-live", "polite");
  control.setAttribute("aria-describedby", error.id);
  form.append(labelElement, control, error);
  return { control, label: labelElement, error };
}

/** The fields of the form of widget `id`, with the limits the server enforces so that the browser stops what it would refuse. */
function formFields(form: HTMLFormElement, id: string, lang: Lang): Record<FormField, Field> {
  const text = STRINGS[lang];
  const fields: Record<FormField, Field> = {
    author: field(form, id, "author", text.name, h("input"), 100),
    "author-website": field(form, id, "author-website", text.website, h("input"), 200),
    email: field(form, id, "email", text.email, h("input"), 254),
    content: field(form, id, "content", text.comment, h("textarea"), 10_000),
    answer: field(form, id, "answer", text.question, h("input"), 64),
  };
  const website = fields["author-website"].control;
  fields.author.control.autocomplete = "name";
  website.setAttribute("autocomplete", "url");
  website.inputMode = "url";
  fields.answer.control.autocomplete = "off";
  // Browsers offer the visitor's address for a field of this type.
  fields.email.control.setAttribute("type", "email");
  fields.content.control.setAttribute("rows", "5");
  return fields;
}

/** Builds the elements of a widget in `lang`: heading, note, "show older", list and form. */
function buildView(lang: Lang): View {
  const text = STRINGS[lang];
  const id = `vigie${++instances}`;
  const root = h("section", "vigie");
  root.lang = lang;
  root.setAttribute("aria-labelledby", `${id}-h`);
  const heading = h("h2", "", text.title);
  heading.id = `${id}-h`;
  const note = h("p");
  note.setAttribute("role", "status");
  const older = h("button", "v-o", text.older);
  older.type = "button";
  older.hidden = true;
  const list = h("ol");
  // Takes the focus when "show older" goes away under it, so a keyboard user keeps their place.
  list.tabIndex = -1;
  const form = h("form");
  const fields = formFields(form, id, lang);
  const notify = h("input");
  notify.type = "checkbox";
  const label = h("label", "", text.notify);
  label.prepend(notify);
  fields.content.label.before(label);
  // The honeypot `homepage`: hidden, so only robots that fill every input of a form fill it. Text
  // inputs are styled by `input[id]`: neither this nor the checkbox has an id.
  const trap = h("input");
  trap.hidden = true;
  const send = h("button", "", text.send);
  const status = h("p");
  status.setAttribute("role", "status");
  form.append(trap, send, status);
  root.append(heading, note, older, list, form);
  return { root, heading, note, older, list, form, fields, notify, trap, send, status, lang };
}

/**
 * Moves the form under a comment to answer it, its "Reply" button then reading "Cancel reply"; or
 * (`target` undefined) back to the end of the widget.
 */
function moveForm(view: View, target?: Replying): void {
  const text = STRINGS[view.lang];
  if (view.replying !== undefined) view.replying.button.textContent = text.reply;
  view.replying = target;
  if (target === undefined) view.root.append(view.form);
  else {
    target.button.textContent = text.cancel;
    target.li.append(view.form);
    view.fields.content.control.focus();
  }
}

/**
 * The list item of a line of the thread, indented by its depth: a deleted comment, or a comment
 * with its author (a link to their website, if any), its time, the author it answers when deeper
 * than the indentation, its text and a "Reply" button.
 */
function item(view: View, lang: Lang, line: ThreadLine): HTMLLIElement {
  const text = STRINGS[lang];
  const li = h("li");
  li.style.marginLeft = `${line.depth * 1.5}em`;
  const comment = line.comment;
  if (comment === undefined) {
    li.append(h("em", "", text.deleted));
    return li;
  }
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
  if (line.replyTo !== undefined) head.append(` · ${text.inReply} ${decodeEntities(line.replyTo)}`);
  const reply = h("button", "v-o", text.reply);
  reply.type = "button";
  reply.addEventListener("click", () =>
    moveForm(view, view.replying?.id === comment.id ? undefined : { id: comment.id, li, button: reply }),
  );
  li.append(head, h("p", "v-c", decodeEntities(comment.content)), reply);
  return li;
}

/**
 * Wires the list of `view`: "show older" loads the next older page above the comments shown.
 * @returns the loader of the newest page and every count of the page, from scratch, which resolves
 *   to the comments shown
 */
function commentList(settings: Settings, view: View): () => Promise<readonly Comment[]> {
  const { lang, article } = settings;
  const { heading, note, older, list } = view;
  const url = `${settings.api}comment/${settings.website}/${encodeURIComponent(article)}`;
  let shown: Comment[] = [];
  // The whole list is drawn again from the comments shown: an older page may hold a parent.
  const draw = () => {
    moveForm(view);
    list.replaceChildren(...threadLines(shown, older.hidden).map((line) => item(view, lang, line)));
  };
  const page = async (): Promise<void> => {
    const { body } = await request(`${url}?${pageQuery(shown)}`);
    if (!isCommentList(body)) {
      note.textContent = errorOf(body) ?? STRINGS[lang].offline;
      return;
    }
    const { fresh, more } = nextPage(body, shown);
    shown = [...fresh, ...shown];
    older.hidden = !more;
    draw();
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
  return async () => {
    shown = [];
    draw();
    note.textContent = "";
    const [counts] = await Promise.all([fillCounts(settings, [article]), page()]);
    const count = counts.get(article) ?? (older.hidden ? shown.length : undefined);
    heading.textContent = count === undefined ? STRINGS[lang].title : countText(lang, count);
    return shown;
  };
}

/** Shows `message` as the error of `target` (none when empty). */
function showError(target: Field, message: string): void {
  target.error.textContent = message;
  target.control.setAttribute("aria-invalid", String(message !== ""));
}

/** The form's challenge: the one answered, and the fetch of a question under way. */
interface Asking {
  challenge?: Challenge | undefined;
  pending?: Promise<void> | undefined;
}

/** Fetches a question (once at a time); a failure is shown beside the answer. */
function ask(settings: Settings, view: View, asking: Asking): Promise<void> {
  const { answer } = view.fields;
  asking.pending ??= (async () => {
    const url = `${settings.api}challenge/${settings.website}/${encodeURIComponent(settings.article)}`;
    const { body } = await request(url, { cache: "no-store" });
    if (isChallenge(body)) {
      asking.challenge = body;
      answer.label.textContent = questionText(settings.lang, body.question);
    } else showError(answer, errorOf(body) ?? STRINGS[settings.lang].offline);
    asking.pending = undefined;
  })();
  return asking.pending;
}

/** Shows what became of a refused comment: beside its field, or under the form. */
function showRefusal(settings: Settings, view: View, asking: Asking, code: number, body: unknown): void {
  const { fields, status } = view;
  // The text typed stays in the form whatever went wrong.
  status.textContent = "";
  const placed = placeError(errorOf(body) ?? (code === 0 ? STRINGS[settings.lang].offline : `HTTP ${code}`));
  if (placed.renew) {
    asking.challenge = undefined;
    fields.answer.control.value = "";
    void ask(settings, view, asking);
  }
  if (placed.field === undefined) status.textContent = placed.text;
  else {
    showError(fields[placed.field], placed.text);
    fields[placed.field].control.focus();
  }
}

/** Posts the comment of the form, then reloads the list (`load`) and says whether it is published. */
async function post(settings: Settings, view: View, asking: Asking, load: () => Promise<readonly Comment[]>) {
  const text = STRINGS[settings.lang];
  const { fields, status } = view;
  const { author, content, answer } = fields;
  const website = fields["author-website"].control;
  const asked = asking.challenge;
  if (asked === undefined) {
    // Only when the first fetch failed: show the question now, to be answered.
    status.textContent = "";
    await ask(settings, view, asking);
    answer.control.focus();
    return;
  }
  const fieldsSent: Record<string, string | number | boolean> = {
    author: author.control.value,
    content: content.control.value,
    answer: answer.control.value,
    // Blank for none: the server reads a blank address as absent, and never mails without one.
    email: fields.email.control.value,
    "notify-replies": view.notify.checked,
    // Blank for people; the server drops the comment of a robot that wrote in it.
    homepage: view.trap.value,
    signature: asked.signature,
    timestamp: asked.timestamp,
  };
  if (website.value.trim() !== "") fieldsSent["author-website"] = website.value.trim();
  if (view.replying !== undefined) fieldsSent.parent = view.replying.id;
  const { status: code, body } = await request(
    `${settings.api}comment/${settings.website}/${encodeURIComponent(settings.article)}`,
    {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(fieldsSent),
    },
  );
  if (code !== 201) return showRefusal(settings, view, asking, code, body);
  asking.challenge = undefined;
  answer.label.textContent = text.question;
  const listed = await load();
  const published = listed.some((comment) =>
    isPosted(comment, author.control.value, content.control.value, asked.timestamp),
  );
  content.control.value = "";
  answer.control.value = "";
  status.textContent = published ? text.published : text.pending;
}

/** Wires the form of `view`: a question fetched when it is first focused, and its submission. */
function commentForm(settings: Settings, view: View, load: () => Promise<readonly Comment[]>): void {
  const { form, send, status, fields } = view;
  const asking: Asking = {};
  form.addEventListener("focusin", () => {
    if (asking.challenge === undefined) void ask(settings, view, asking);
  });
  let busy = false;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (busy) return;
    busy = true;
    // aria-disabled rather than disabled: a disabled button loses the keyboard focus.
    send.setAttribute("aria-disabled", "true");
    for (const each of Object.values(fields)) showError(each, "");
    status.textContent = STRINGS[settings.lang].sending;
    try {
      await post(settings, view, asking, load);
    } finally {
      busy = false;
      send.removeAttribute("aria-disabled");
    }
  });
}

/** Builds the widget into `target` and loads its comments. */
function render(target: Element, settings: Settings): void {
  const view = buildView(settings.lang);
  target.append(view.root);
  const load = commentList(settings, view);
  commentForm(settings, view, load);
  void load();
}

/** Reads the script's attributes, injects the style once, renders the widget and fills the counts. */
function start(script: HTMLScriptElement): void {
  const data = script.dataset;
  if (!data.website) {
    console.error("vigie: widget.js needs data-website");
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
