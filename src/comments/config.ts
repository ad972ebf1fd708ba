/**
 * The `comments:` section of the configuration (docs/configuration.md), its environment overrides
 * and the name rules of websites and articles applied to the configured ones. Unknown keys are
 * refused at every level.
 */
import type { Duration } from "../platform/duration.js";
import { parseAllowedOrigin } from "../platform/host-origin.js";
import { secretFile } from "../platform/secret-file.js";
import * as v from "../platform/validation.js";
import { ANSWER_MAX_LENGTH } from "./comment-validation.js";
import {
  ANY_ORIGIN,
  ARTICLE_NAME,
  ARTICLE_NAME_RULE,
  MODERATION_MODES,
  type ModerationMode,
  WEBSITE_NAME,
  WEBSITE_NAME_RULE,
} from "./websites.js";

/** Environment variables overriding keys of the section. */
export const COMMENTS_ENVIRONMENT: Readonly<Record<string, string>> = {
  VIGIE_COMMENTS_ADMIN_TOKEN: "admin-token",
  VIGIE_COMMENTS_CHALLENGE_SECRET: "challenge.secret",
};

/** The default challenge TTL and rate-limit window. */
const TEN_MINUTES: Duration = { text: "10m", milliseconds: 600_000 };

const ORIGIN_RULE = "must be * or an origin such as https://blog.example.org (scheme, host and optional port, no path)";

/**
 * An entry of `allowed-origins`: `*`, or an http(s) origin, returned serialised the way browsers
 * send it in `Origin` (lower-case host, default port left out, no trailing slash), as the platform
 * reads `http.allowed-origins`; subdomain wildcards are not taken here.
 */
const origin: v.Validator<string> = (value, path) => {
  if (value === ANY_ORIGIN) return value;
  const parsed = typeof value === "string" ? parseAllowedOrigin(value) : undefined;
  if (parsed === undefined || parsed.includes("*")) throw new v.ValidationError(path, ORIGIN_RULE, value);
  return parsed;
};

/**
 * A secret given in the file or the environment: never echoed in errors. Leading or trailing white
 * space is refused because tokens are read trimmed from the `Authorization` header.
 */
const secretText = v.secret(
  v.string({ min: 1, pattern: /^\S(?:[\s\S]*\S)?$/, patternRule: "must not start or end with white space" }),
);

const question = v.object(
  {
    question: v.required(v.string({ min: 1, trim: true })),
    // A visitor's answer has at most 64 characters: a longer one could never match.
    answer: v.required(v.string({ min: 1, max: ANSWER_MAX_LENGTH, trim: true })),
  },
  { unknownKeys: "reject" },
);

/**
 * A secret given inline and through a file at once: refused, since which one wins would be a guess.
 * `inline` and `file` are the full paths of the two keys.
 */
export function refuseBoth(inline: string, file: string, values: { inline?: string; file?: string }): void {
  if (values.inline !== undefined && values.file !== undefined) {
    throw new v.ValidationError(inline, `must not be set together with ${file}: set one of ${inline} and ${file}`);
  }
}

const challengeObject = v.object(
  {
    secret: v.optional(secretText),
    /** A file holding the secret (mode 0600); the value is the file's content. */
    "secret-file": v.optional(secretFile(secretText)),
    ttl: v.withDefault(v.duration(1_000), TEN_MINUTES),
    type: v.withDefault(v.oneOf(["math", "questions"] as const), "math"),
    questions: v.withDefault(v.array(question), []),
  },
  { unknownKeys: "reject", optional: true },
);

/** `challenge`: `questions` must list at least one question when `type` is `questions`. */
const challenge: v.Validator<v.Infer<typeof challengeObject>> = (value, path) => {
  const parsed = challengeObject(value, path);
  refuseBoth(v.childPath(path, "secret"), v.childPath(path, "secret-file"), {
    inline: parsed.secret,
    file: parsed["secret-file"],
  });
  if (parsed.type === "questions" && parsed.questions.length === 0) {
    throw new v.ValidationError(
      v.childPath(path, "questions"),
      "must list at least one question when type is questions",
    );
  }
  return parsed;
};

const websiteObject = v.object(
  {
    name: v.required(v.string({ pattern: WEBSITE_NAME, rule: WEBSITE_NAME_RULE })),
    "allowed-origins": v.withDefault(v.array(origin), []),
    /** The former switch: `true` is `moderation: none`, `false` is `moderation: all`. */
    "auto-approve": v.optional(v.boolean()),
    moderation: v.optional(v.oneOf(MODERATION_MODES)),
    articles: v.withDefault(v.array(v.string({ pattern: ARTICLE_NAME, rule: ARTICLE_NAME_RULE })), []),
  },
  { unknownKeys: "reject" },
);

/** A configured website with its moderation mode resolved from `moderation` or `auto-approve`. */
export type WebsiteConfig = Omit<v.Infer<typeof websiteObject>, "moderation" | "auto-approve"> & {
  readonly moderation: ModerationMode;
};

/** One website: `moderation` and `auto-approve` together are refused (which one wins would be a guess). */
const website: v.Validator<WebsiteConfig> = (value, path) => {
  const { "auto-approve": autoApprove, moderation, ...rest } = websiteObject(value, path);
  if (autoApprove !== undefined && moderation !== undefined) {
    throw new v.ValidationError(
      v.childPath(path, "auto-approve"),
      "must not be set together with moderation: set moderation only (auto-approve true is moderation none)",
    );
  }
  return { ...rest, moderation: moderation ?? (autoApprove === true ? "none" : "all") };
};

/** `websites`: names unique, since a name identifies a website in every path. */
const websites: v.Validator<WebsiteConfig[]> = (value, path) => {
  const list = v.array(website)(value, path);
  const seen = new Set<string>();
  list.forEach((entry, index) => {
    if (seen.has(entry.name)) {
      throw new v.ValidationError(`${path}[${index}].name`, "must not repeat the name of another website", entry.name);
    }
    seen.add(entry.name);
  });
  return list;
};

/** A bare e-mail address of an administrator. */
const adminAddress = v.string({
  min: 3,
  max: 254,
  pattern: /^[^\s@<>()[\],;:\\"]+@[^\s@<>()[\],;:\\"]+\.[^\s@<>()[\],;:\\"]+$/,
  patternRule: "must be an e-mail address such as admin@example.org",
});

/** `email`: which `email` output sends the module's mail, and who moderates. */
const email = v.optional(
  v.object(
    {
      output: v.required(v.string({ min: 1 })),
      "notify-admin": v.withDefault(v.oneOf(["pending", "all", "none"] as const), "pending"),
      admin: v.withDefault(v.array(adminAddress, { max: 100 }), []),
    },
    { unknownKeys: "reject" },
  ),
);

/** `spam`: the cheap signals checked on every posted comment. */
const spam = v.object(
  {
    honeypot: v.withDefault(v.boolean(), true),
    "min-answer-time": v.withDefault(v.duration(0), { text: "0s", milliseconds: 0 }),
    "max-links": v.withDefault(v.integer(0, 1000), 3),
  },
  { unknownKeys: "reject", optional: true },
);

/** `akismet`: an Akismet-compatible comment-check service. */
const akismet = v.optional(
  v.object(
    {
      key: v.required(secretText),
      url: v.withDefault(
        v.string({ pattern: /^https?:\/\/\S+$/, patternRule: "must be an http:// or https:// URL" }),
        "https://rest.akismet.com/1.1/comment-check",
      ),
    },
    { unknownKeys: "reject" },
  ),
);

/**
 * `email`: its output must be an `email` output declared under `outputs:` (whose SMTP settings and
 * `from` are used), and it needs moderators unless `notify-admin` is `none`.
 * @param outputs the top-level `outputs:` definitions, by name
 * @throws ValidationError naming `comments.email.output` or `comments.email.admin`
 */
export function checkEmail(
  settings: v.Infer<typeof email>,
  outputs: Readonly<Record<string, { readonly type: string }>>,
): void {
  if (settings === undefined) return;
  if (outputs[settings.output]?.type !== "email") {
    throw new v.ValidationError(
      "comments.email.output",
      `must name an output of type email declared under outputs (${settings.output} is not one)`,
    );
  }
  if (settings["notify-admin"] !== "none" && settings.admin.length === 0) {
    throw new v.ValidationError("comments.email.admin", "must list at least one address unless notify-admin is none");
  }
}

/** The keys of `comments:` besides `enabled`. Durations are parsed. */
export const commentsConfigShape = {
  "admin-token": v.optional(secretText),
  /** A file holding the admin token (mode 0600); the value is the file's content. */
  "admin-token-file": v.optional(secretFile(secretText)),
  challenge,
  "rate-limit": v.object(
    {
      comments: v.withDefault(v.integer(1, 1_000_000), 5),
      per: v.withDefault(v.duration(1_000), TEN_MINUTES),
    },
    { unknownKeys: "reject", optional: true },
  ),
  websites: v.withDefault(websites, []),
  /** E-mail to moderators and to commenters who asked for replies; absent: no mail. */
  email,
  spam,
  /** An optional Akismet-compatible check of each comment; absent: not asked. */
  akismet,
  /** Streams that receive every new comment as an event. */
  streams: v.withDefault<string[]>(
    v.array(
      v.string({
        pattern: /^[A-Za-z0-9._-]{1,128}$/,
        patternRule: "must be a stream name: 1 to 128 characters of A-Z a-z 0-9 . _ -",
      }),
    ),
    [],
  ),
} satisfies v.Shape;
