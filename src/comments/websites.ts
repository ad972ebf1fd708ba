/**
 * Websites and articles: the name rules, the configured websites with their
 * article allow-lists, open mode (no configured list: any well-formed name is a website), and which
 * origins may call the public API of a website (CORS).
 */
import { NotFoundError } from "../platform/errors.js";

/** `<website>`: 1–64 characters of `A-Z a-z 0-9 . _ -`. */
export const WEBSITE_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** The website name rule, worded for configuration errors. */
export const WEBSITE_NAME_RULE = "must be 1 to 64 characters of A-Z a-z 0-9 . _ -";

/** `<article>`: 1–200 characters of `A-Z a-z 0-9 . _ ~ -`. */
export const ARTICLE_NAME = /^[A-Za-z0-9._~-]{1,200}$/;

/** The article name rule, worded for configuration errors. */
export const ARTICLE_NAME_RULE = "must be 1 to 200 characters of A-Z a-z 0-9 . _ ~ -";

/** The entry of `allowed-origins` that lets every origin in. */
export const ANY_ORIGIN = "*";

/** How new comments of a website are moderated (docs/comments.md, "Moderation modes"). */
export const MODERATION_MODES = ["all", "first", "none"] as const;
/** `all`: every comment waits; `first`: authors approved before skip the wait; `none`: approved at once. */
export type ModerationMode = (typeof MODERATION_MODES)[number];

/** One entry of `comments.websites`, as validated by the configuration (config.ts). */
export interface WebsiteSettings {
  readonly name: string;
  /** Serialised origins (`https://blog.example.org`), or `*` for any. */
  readonly "allowed-origins": readonly string[];
  /** How new comments are moderated (config.ts resolves `auto-approve` into it). */
  readonly moderation: ModerationMode;
  /** The article allow-list; empty: any article. */
  readonly articles: readonly string[];
}

/** A website comments can be posted to. */
export interface Website {
  readonly name: string;
  /** How new comments are moderated: `all` wait, `first` known authors skip, `none` approved at once. */
  readonly moderation: ModerationMode;
  /** The origins allowed to call the public API from a browser, or `any`. */
  readonly allowedOrigins: ReadonlySet<string> | "any";
  /** The article allow-list, or `undefined` when any article is accepted. */
  readonly articles: ReadonlySet<string> | undefined;
}

/** The message of an unknown website. */
export function websiteNotFound(name: string): NotFoundError {
  return new NotFoundError(`website ${name} not found`);
}

/** The message of an unknown article. */
export function articleNotFound(name: string): NotFoundError {
  return new NotFoundError(`article ${name} not found`);
}

/** The websites of the configuration, or open mode when none is configured. */
export class Websites {
  readonly #configured: ReadonlyMap<string, Website> | undefined;

  /** @param settings the `comments.websites` list; empty means open mode */
  constructor(settings: readonly WebsiteSettings[]) {
    if (settings.length === 0) {
      this.#configured = undefined;
      return;
    }
    const configured = new Map<string, Website>();
    for (const entry of settings) {
      const origins = entry["allowed-origins"];
      configured.set(entry.name, {
        name: entry.name,
        moderation: entry.moderation,
        allowedOrigins: origins.includes(ANY_ORIGIN) ? "any" : new Set(origins),
        articles: entry.articles.length === 0 ? undefined : new Set(entry.articles),
      });
    }
    this.#configured = configured;
  }

  /** True when no website is configured and any well-formed name is accepted. */
  get openMode(): boolean {
    return this.#configured === undefined;
  }

  /** The configured website names in configuration order, or `undefined` in open mode. */
  get names(): readonly string[] | undefined {
    return this.#configured === undefined ? undefined : [...this.#configured.keys()];
  }

  /**
   * The website called `name`, or `undefined` when the name breaks the name rules or, with a
   * configured list, is not in it. Case-sensitive, like every path segment.
   */
  find(name: string): Website | undefined {
    if (this.#configured !== undefined) return this.#configured.get(name);
    if (!WEBSITE_NAME.test(name)) return undefined;
    return { name, moderation: "all", allowedOrigins: "any", articles: undefined };
  }

  /**
   * The website called `name`.
   * @throws NotFoundError `website <name> not found`
   */
  get(name: string): Website {
    const website = this.find(name);
    if (website === undefined) throw websiteNotFound(name);
    return website;
  }

  /**
   * The website called `website` after checking that it accepts article `article`.
   * @throws NotFoundError `website <website> not found` or `article <article> not found`
   */
  getWithArticle(website: string, article: string): Website {
    const found = this.get(website);
    if (!ARTICLE_NAME.test(article) || (found.articles !== undefined && !found.articles.has(article))) {
      throw articleNotFound(article);
    }
    return found;
  }
}

/**
 * The value of `Access-Control-Allow-Origin` for a request to `website` from `origin` (the `Origin`
 * request header): the origin itself when the website allows it, `undefined` when it does not or
 * when the request carries no origin (not a cross-origin browser request). The origin is echoed
 * rather than answered with `*` so that every answer varies on `Origin` the same way.
 */
export function allowedOrigin(website: Website, origin: string | undefined): string | undefined {
  if (origin === undefined || origin === "") return undefined;
  if (website.allowedOrigins === "any" || website.allowedOrigins.has(origin)) return origin;
  return undefined;
}
