/**
 * The status pages of the configuration (docs/healthchecks.md): `healthchecks.status-pages`, a list
 * of pages each at its own path, or the older single `healthchecks.status-page`, which stays
 * accepted as the page at `/status`. Setting both is a configuration error.
 */
import {
  array,
  boolean,
  described,
  type Infer,
  object,
  required,
  schemaOf,
  string,
  ValidationError,
  type Validator,
  withDefault,
} from "../../platform/validation.js";
import { selectorText } from "./selectors.js";

/** Pages at most: each page has its routes and its cache. */
export const MAX_STATUS_PAGES = 100;

/** A page's slug: the empty string (the page at `/status`) or 1 to 64 of `a-z 0-9 -`. */
const slug: Validator<string> = string({
  max: 64,
  pattern: /^[a-z0-9-]*$/,
  rule: 'must be "" or 1 to 64 characters of a-z 0-9 -',
});

const singleShape = object(
  {
    enabled: withDefault(boolean(), false),
    title: withDefault(string({ min: 1, max: 200 }), "Status"),
    checks: withDefault<string[]>(array(selectorText), []),
  },
  { unknownKeys: "reject", optional: true },
);

const pageShape = object(
  {
    slug: required(slug),
    title: withDefault(string({ min: 1, max: 200 }), "Status"),
    description: withDefault(string({ max: 1_000 }), ""),
    checks: withDefault<string[]>(array(selectorText), []),
  },
  { unknownKeys: "reject" },
);

/** `healthchecks.status-page` as validated. */
export type SingleStatusPage = Infer<typeof singleShape>;

/** One page of `healthchecks.status-pages`, as validated. */
export type ConfiguredStatusPage = Infer<typeof pageShape>;

/** A page as the module serves it, from either key. */
export interface StatusPageSettings {
  /** `""` for `/status`, else the last segment of `/status/<slug>`. */
  readonly slug: string;
  readonly title: string;
  /** Plain text under the title; `""` for none. */
  readonly description: string;
  /** Selectors (names or `label=value`); empty selects every check. */
  readonly checks: readonly string[];
  /** Where the page is in the configuration, for errors: `healthchecks.status-pages[1]`. */
  readonly key: string;
}

/** A slug that would collide with a route of the page at `/status`. */
const RESERVED_SLUGS: ReadonlySet<string> = new Set(["data"]);

/**
 * Validates the list: unique slugs, none reserved (`data` is the JSON of `/status`).
 * @throws ValidationError `healthchecks.status-pages[1].slug: must be unique (healthchecks.status-pages[0] has the same slug)`
 */
const pageList: Validator<ConfiguredStatusPage[]> = described(
  (value, path) => {
    const pages = array(pageShape, { max: MAX_STATUS_PAGES })(value, path);
    const seen = new Map<string, number>();
    pages.forEach((page, index) => {
      const at = `${path}[${index}].slug`;
      if (RESERVED_SLUGS.has(page.slug))
        throw new ValidationError(at, "must not be data (the path of a page's JSON)", page.slug);
      const previous = seen.get(page.slug);
      if (previous !== undefined) {
        throw new ValidationError(at, `must be unique (${path}[${previous}] has the same slug)`, page.slug);
      }
      seen.set(page.slug, index);
    });
    return pages;
  },
  schemaOf(array(pageShape, { max: MAX_STATUS_PAGES })),
);

/**
 * The two keys of the section, sharing the state of one parse: a non-empty `status-pages` is
 * refused when `status-page` was written. The platform validates a section's keys in the order of its shape
 * (config.ts), so `status-page` must come before `status-pages`, and `reset` runs at the start of
 * each parse.
 */
export function statusPageKeys() {
  let singleWritten = false;
  const single = withDefault<SingleStatusPage>(
    described((value, path) => {
      singleWritten = true;
      return singleShape(value, path);
    }, schemaOf(singleShape)),
    singleShape(undefined, ""),
  );
  // An empty list is the default (what `vigie init` writes beside `status-page`): not a conflict.
  const several = withDefault<ConfiguredStatusPage[]>(
    described((value, path) => {
      const pages = pageList(value, path);
      if (singleWritten && pages.length > 0) {
        throw new ValidationError(
          path,
          'cannot be set together with healthchecks.status-page: keep one of them (a page with slug "" is /status)',
        );
      }
      return pages;
    }, schemaOf(pageList)),
    [],
  );
  return {
    reset: () => {
      singleWritten = false;
    },
    single,
    several,
  };
}

/** The pages the module serves: `status-pages`, or the page of `status-page` when enabled, or none. */
export function statusPagesOf(section: {
  readonly "status-page": SingleStatusPage;
  readonly "status-pages": readonly ConfiguredStatusPage[];
}): StatusPageSettings[] {
  const several = section["status-pages"];
  if (several.length > 0) {
    return several.map((page, index) => ({ ...page, key: `healthchecks.status-pages[${index}]` }));
  }
  const single = section["status-page"];
  if (!single.enabled) return [];
  return [{ slug: "", title: single.title, description: "", checks: single.checks, key: "healthchecks.status-page" }];
}

/** The path of a page: `/status` for the slug `""`, `/status/<slug>` otherwise. */
export function pagePath(slug: string): string {
  return slug === "" ? "/status" : `/status/${slug}`;
}
