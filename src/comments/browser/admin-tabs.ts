/** The tabs of the moderation page (WAI-ARIA Authoring Practices: tabs with automatic activation). */
import { button } from "./admin-controls.js";
import { h } from "./dom.js";

/** A tab list and its panels. */
export interface Tabs {
  /** The `role="tablist"` element holding the tab buttons. */
  readonly element: HTMLElement;
  /** The panels, in the order of their tabs. */
  readonly panels: readonly HTMLElement[];
  /** Adds a tab called `title` and returns its (empty) panel. */
  add(id: string, title: string): HTMLElement;
  /** Shows the `index`-th panel (and focuses its tab when `focus`). */
  select(index: number, focus: boolean): void;
  /** Focuses the first tab. */
  focusFirst(): void;
}

/** The index of the tab a key moves to from tab `index` of `count`: arrows, Home and End; `undefined` for other keys. */
function tabAfterKey(key: string, index: number, count: number): number | undefined {
  const step = { ArrowRight: 1, ArrowLeft: -1 }[key];
  const to = key === "Home" ? 0 : key === "End" ? -1 : undefined;
  if (step === undefined && to === undefined) return undefined;
  return ((to ?? index + (step ?? 0)) + count) % count;
}

/** An empty tab list called `label`. */
export function tabList(label: string): Tabs {
  const element = h("div", "tabs");
  element.setAttribute("role", "tablist");
  element.setAttribute("aria-label", label);
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
  const add = (id: string, title: string): HTMLElement => {
    const index = tabButtons.length;
    const tab = button(title);
    tab.id = `tab-${id}`;
    tab.setAttribute("role", "tab");
    tab.setAttribute("aria-controls", `panel-${id}`);
    tab.addEventListener("click", () => select(index, false));
    tab.addEventListener("keydown", (event) => {
      const to = tabAfterKey(event.key, index, tabButtons.length);
      if (to === undefined) return;
      event.preventDefault();
      select(to, true);
    });
    const panel = h("section", "panel");
    panel.id = `panel-${id}`;
    panel.setAttribute("role", "tabpanel");
    panel.setAttribute("aria-labelledby", tab.id);
    tabButtons.push(tab);
    panels.push(panel);
    element.append(tab);
    return panel;
  };
  return { element, panels, add, select, focusFirst: () => tabButtons[0]?.focus() };
}
