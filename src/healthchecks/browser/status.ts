/**
 * The status page's refresh script (docs/healthchecks.md), bundled by esbuild into
 * `dist/healthchecks/browser/status.js` and served at `/status/status.js`. Every
 * `data-refresh-ms` milliseconds (30 s by default) it reads the page's data (`data-source`,
 * `/status/data` or `/status/<slug>/data`), incidents included, renders the view of
 * status-view.ts (the one the server rendered the page with) and patches `<main>` in place: no
 * reload, no node replaced when only its text or attributes changed, so a reader's place is kept.
 * State changes and failed refreshes are written to the page's `role="status"` region, which
 * screen readers announce.
 *
 * It pauses while the page is hidden and refreshes at once when it is shown again.
 */
import {
  formatUtc,
  isStatusData,
  STATE_TEXT,
  type StatusData,
  statusView,
  type ViewNode,
} from "../status-page/view.js";

const SVG_NAMESPACE = "http://www.w3.org/2000/svg";
const DATA_URL = "/status/data";
const DEFAULT_REFRESH_MS = 30_000;

/** Builds the DOM node of a view node; `svg` says whether it is inside an `<svg>`. */
function create(node: ViewNode, svg: boolean): Node {
  if (typeof node === "string") return document.createTextNode(node);
  const inSvg = svg || node.tag === "svg";
  const element = inSvg ? document.createElementNS(SVG_NAMESPACE, node.tag) : document.createElement(node.tag);
  for (const [name, value] of Object.entries(node.attributes)) element.setAttribute(name, value);
  for (const child of node.children) element.append(create(child, inSvg));
  return element;
}

/** Makes `current` look like `node`, changing only what differs. */
function patch(current: ChildNode, node: ViewNode, svg: boolean): void {
  if (typeof node === "string") {
    if (current.nodeType !== Node.TEXT_NODE) current.replaceWith(create(node, svg));
    else if (current.nodeValue !== node) current.nodeValue = node;
    return;
  }
  if (!(current instanceof Element) || current.localName !== node.tag) {
    current.replaceWith(create(node, svg));
    return;
  }
  for (const { name } of [...current.attributes]) {
    if (!Object.hasOwn(node.attributes, name)) current.removeAttribute(name);
  }
  for (const [name, value] of Object.entries(node.attributes)) {
    if (current.getAttribute(name) !== value) current.setAttribute(name, value);
  }
  patchChildren(current, node.children, svg || node.tag === "svg");
}

/** Makes the children of `parent` those of `nodes`, position by position. */
function patchChildren(parent: Element, nodes: readonly ViewNode[], svg: boolean): void {
  nodes.forEach((node, index) => {
    const current = parent.childNodes[index];
    if (current === undefined) parent.append(create(node, svg));
    else patch(current, node, svg);
  });
  while (parent.childNodes.length > nodes.length) parent.lastChild?.remove();
}

/** The state of each check as the page shows it now (`data-name`, `data-state` of its article). */
function shownStates(main: Element): Map<string, string> {
  const states = new Map<string, string>();
  for (const article of main.querySelectorAll("article[data-name]")) {
    states.set(article.getAttribute("data-name") ?? "", article.getAttribute("data-state") ?? "");
  }
  return states;
}

/** `website is now Down` for each check whose state changed since `before`. */
function changes(before: ReadonlyMap<string, string>, data: StatusData): string[] {
  const lines: string[] = [];
  for (const group of data.groups) {
    for (const check of group.checks) {
      const previous = before.get(check.name);
      if (previous !== undefined && previous !== check.state) {
        lines.push(`${check.name} is now ${STATE_TEXT[check.state]}`);
      }
    }
  }
  return lines;
}

/** Starts the refresh loop of the page, when it is the status page. */
function start(): void {
  const main = document.getElementById("status");
  const notice = document.getElementById("notice");
  if (main === null || notice === null) return;
  // Each page names its own data (`/status/ops/data`); anything else falls back to the first page's.
  const source = main.dataset.source;
  const dataUrl = source !== undefined && /^\/status(\/[a-z0-9-]{1,64})?\/data$/.test(source) ? source : DATA_URL;
  const asked = Number(main.dataset.refreshMs);
  const refreshMs = Number.isInteger(asked) && asked >= 1_000 ? asked : DEFAULT_REFRESH_MS;
  let states = shownStates(main);
  let failing = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = false;

  const failed = () => {
    // Said once per run of failures: a live region repeating itself every refresh is noise.
    if (failing) return;
    failing = true;
    const shown = main.querySelector(".updated time")?.textContent ?? "";
    notice.textContent = `Could not refresh the page at ${formatUtc(new Date().toISOString(), true)}; it shows the data of ${shown}. Trying again.`;
  };

  const refresh = async () => {
    let data: unknown;
    try {
      const response = await fetch(dataUrl, { cache: "no-store", headers: { accept: "application/json" } });
      if (!response.ok) throw new Error(`status ${response.status}`);
      data = await response.json();
    } catch {
      failed();
      return;
    }
    if (!isStatusData(data)) {
      failed();
      return;
    }
    const changed = changes(states, data);
    patchChildren(main, statusView(data), false);
    states = shownStates(main);
    if (changed.length > 0) notice.textContent = `${formatUtc(data.generated, true)}: ${changed.join("; ")}.`;
    else if (failing) notice.textContent = "";
    failing = false;
  };

  const tick = async () => {
    clearTimeout(timer);
    timer = undefined;
    // A refresh in flight schedules the next one; a hidden page waits to be shown.
    if (running || document.hidden) return;
    running = true;
    try {
      await refresh();
    } finally {
      running = false;
      timer = setTimeout(tick, refreshMs);
    }
  };

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) void tick();
  });
  timer = setTimeout(tick, refreshMs);
}

start();
