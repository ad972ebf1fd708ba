/**
 * Which checks the status page shows (docs/healthchecks.md): `healthchecks.status-page.checks` lists
 * selectors, each a check name (`website`) or a label selector (`team=web`, the label `team` with
 * the value `web`). The page shows every check some selector selects, in the order of the
 * selectors (the checks of one selector by name); an empty list selects every check.
 *
 * Selectors are evaluated again at each render, so checks added or removed later (API, SIGHUP) come
 * and go on the page; a selector that selects nothing then shows nothing. At start-up each must
 * select at least one check (status-routes.ts, `checkStatusSelectors`).
 */

import { string, type Validator } from "../../platform/validation.js";

/**
 * A selector as written (`healthchecks.status-page.checks`, the `checks` of a maintenance window):
 * a check name, or `label=value` (`team=web`).
 */
export const selectorText: Validator<string> = string({
  min: 1,
  max: 512,
  pattern: /^[^=\s][^=]*(=.*)?$/,
  patternRule: "must be a check name or a label selector such as team=web",
});

/** A parsed selector. */
export type StatusSelector =
  | { readonly kind: "name"; readonly name: string }
  | { readonly kind: "label"; readonly label: string; readonly value: string; readonly text: string };

/** What a selector is matched against: a check's name and its labels (never shown, only matched). */
export interface SelectableCheck {
  readonly definition: {
    readonly name: string;
    readonly labels?: Readonly<Record<string, string>>;
  };
}

/**
 * Parses a selector: `key=value` (split at the first `=`) is a label selector, anything else a
 * name. Label names cannot hold `=` (they are Prometheus label names), values can.
 */
export function parseSelector(text: string): StatusSelector {
  const equals = text.indexOf("=");
  if (equals <= 0) return { kind: "name", name: text };
  return { kind: "label", label: text.slice(0, equals), value: text.slice(equals + 1), text };
}

/**
 * Whether `selector` selects `check`. A label selector also selects a check named exactly like it
 * (check names may hold `=`), so such a check can still be listed by name.
 */
export function selects(selector: StatusSelector, check: SelectableCheck): boolean {
  const { name, labels } = check.definition;
  switch (selector.kind) {
    case "name":
      return name === selector.name;
    case "label":
      return name === selector.text || (labels !== undefined && labels[selector.label] === selector.value);
  }
}

/**
 * The checks `selectors` select among `checks`, each once: in the order of the selectors, the
 * checks of one selector in the order of `checks` (the catalog lists them by name). An empty
 * `selectors` selects every check.
 */
export function selectChecks<C extends SelectableCheck>(
  selectors: readonly StatusSelector[],
  checks: readonly C[],
): C[] {
  if (selectors.length === 0) return [...checks];
  const chosen = new Set<C>();
  for (const selector of selectors) {
    for (const check of checks) if (selects(selector, check)) chosen.add(check);
  }
  return [...chosen];
}

/**
 * Why `selector` selects none of `checks`, worded to follow the key's path
 * (`selects no healthcheck: no check has the label team=web`); undefined when it selects one.
 */
export function unmatchedReason(selector: StatusSelector, checks: readonly SelectableCheck[]): string | undefined {
  if (checks.some((check) => selects(selector, check))) return undefined;
  switch (selector.kind) {
    case "name":
      return `selects no healthcheck: no check is named ${selector.name}`;
    case "label":
      return `selects no healthcheck: no check has the label ${selector.label}=${selector.value}`;
  }
}
