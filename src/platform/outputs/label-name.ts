/**
 * Label names as Prometheus and Alertmanager accept them: `[a-zA-Z_][a-zA-Z0-9_]*` (Prometheus data
 * model, https://prometheus.io/docs/concepts/data_model/). Event fields may be named anything.
 */

const INVALID = /[^a-zA-Z0-9_]/g;

/** How many sanitised names are remembered before the cache starts over (field names are unbounded). */
const CACHE_LIMIT = 10_000;
const cache = new Map<string, string>();

/**
 * A field name made a valid label name: every character outside `[a-zA-Z0-9_]` becomes `_` (one
 * `_` per UTF-16 code unit), and so does a leading digit (`2xx-rate` → `_xx_rate`).
 * @returns `undefined` for the empty name, which no sanitising can make valid
 */
export function labelName(field: string): string | undefined {
  const cached = cache.get(field);
  if (cached !== undefined) return cached;
  if (field === "") return undefined;
  let name = field.replace(INVALID, "_");
  const first = name.charCodeAt(0);
  if (first >= 48 && first <= 57) name = `_${name.slice(1)}`;
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(field, name);
  return name;
}

/** The value of a label and the event field it was taken from. */
export interface LabelSource {
  readonly field: string;
  readonly value: string;
}

/**
 * Records a field's value under its sanitised label name, unless a field whose own name sorts
 * first (UTF-16 code unit order, as `<` compares strings) already holds that name: `a-b` and `a.b`
 * both become `a_b`, and `a-b` wins since `-` < `.`. The winner thus depends only on which fields
 * the event has, never on the order of its keys nor of a configured list, so that the same event
 * always makes the same series or alert.
 * @param picked label name → source, filled by successive calls
 * @param name `labelName(field)`
 */
export function pickLabel(picked: Map<string, LabelSource>, name: string, field: string, value: string): void {
  const current = picked.get(name);
  if (current === undefined || field < current.field) picked.set(name, { field, value });
}
