import { describe, expect, it } from "vitest";
import { commentsModule } from "../../src/comments/index.js";
import { ConfigError, parseConfig } from "../../src/platform/config.js";

function parse(comments: unknown, environment: Record<string, string> = {}) {
  return parseConfig({ comments }, environment, [commentsModule]).modules.comments as Record<string, unknown>;
}

function refusal(comments: unknown): string {
  try {
    parse(comments);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  return "accepted";
}

describe("comments configuration", () => {
  it("has a default for every key", () => {
    expect(parse(undefined)).toEqual({
      enabled: true,
      challenge: { ttl: { text: "10m", milliseconds: 600_000 }, type: "math", questions: [] },
      "rate-limit": { comments: 5, per: { text: "10m", milliseconds: 600_000 } },
      websites: [],
      streams: [],
      spam: { honeypot: true, "min-answer-time": { text: "0s", milliseconds: 0 }, "max-links": 3 },
    });
  });

  it("reads every key of the comments section", () => {
    const section = parse({
      enabled: true,
      "admin-token": "admin-secret",
      challenge: {
        secret: "challenge-secret",
        ttl: "5m",
        type: "questions",
        questions: [{ question: "What colour is the sky?", answer: " Blue " }],
      },
      "rate-limit": { comments: 3, per: "1h" },
      websites: [
        {
          name: "blog",
          "allowed-origins": ["https://Blog.Example.org/", "http://localhost:1313", "*"],
          "auto-approve": true,
          articles: ["post-1", "post~2"],
        },
      ],
      streams: ["comments", "default"],
    });
    expect(section).toEqual({
      enabled: true,
      "admin-token": "admin-secret",
      challenge: {
        secret: "challenge-secret",
        ttl: { text: "5m", milliseconds: 300_000 },
        type: "questions",
        questions: [{ question: "What colour is the sky?", answer: "Blue" }],
      },
      "rate-limit": { comments: 3, per: { text: "1h", milliseconds: 3_600_000 } },
      websites: [
        {
          name: "blog",
          "allowed-origins": ["https://blog.example.org", "http://localhost:1313", "*"],
          moderation: "none",
          articles: ["post-1", "post~2"],
        },
      ],
      streams: ["comments", "default"],
      spam: { honeypot: true, "min-answer-time": { text: "0s", milliseconds: 0 }, "max-links": 3 },
    });
  });

  it("takes secrets from the environment, over the file", () => {
    const section = parse(
      { "admin-token": "from-file", challenge: { secret: "from-file" } },
      { VIGIE_COMMENTS_ADMIN_TOKEN: "from-env", VIGIE_COMMENTS_CHALLENGE_SECRET: "env-secret" },
    );
    expect(section["admin-token"]).toBe("from-env");
    expect((section.challenge as { secret: string }).secret).toBe("env-secret");
  });

  it("refuses unknown keys at every level", () => {
    expect(refusal({ admin_token: "x" })).toMatch(/^invalid configuration: comments\.admin_token: unknown key/);
    expect(refusal({ challenge: { tll: "1m" } })).toMatch(
      /^invalid configuration: comments\.challenge\.tll: unknown key/,
    );
    expect(refusal({ "rate-limit": { count: 1 } })).toMatch(/comments\.rate-limit\.count: unknown key/);
    expect(refusal({ websites: [{ name: "blog", origins: [] }] })).toMatch(
      /comments\.websites\[0\]\.origins: unknown key/,
    );
    expect(
      refusal({ challenge: { type: "questions", questions: [{ question: "q", answer: "a", hint: "h" }] } }),
    ).toMatch(/comments\.challenge\.questions\[0\]\.hint: unknown key/);
  });

  it("requires questions when type is questions", () => {
    expect(refusal({ challenge: { type: "questions" } })).toBe(
      "invalid configuration: comments.challenge.questions: must list at least one question when type is questions",
    );
    expect(refusal({ challenge: { type: "questions", questions: [] } })).toMatch(/must list at least one question/);
    expect(refusal({ challenge: { type: "riddles" } })).toBe(
      'invalid configuration: comments.challenge.type: must be one of math, questions (got "riddles")',
    );
    expect(refusal({ challenge: { type: "questions", questions: [{ question: "q" }] } })).toBe(
      "invalid configuration: comments.challenge.questions[0].answer: is required",
    );
    expect(
      refusal({ challenge: { type: "questions", questions: [{ question: "q", answer: "x".repeat(65) }] } }),
    ).toMatch(/questions\[0\]\.answer: must have at most 64 characters/);
  });

  it("applies the name rules to websites and articles", () => {
    expect(refusal({ websites: [{ name: "my blog" }] })).toBe(
      'invalid configuration: comments.websites[0].name: must be 1 to 64 characters of A-Z a-z 0-9 . _ - (got "my blog")',
    );
    expect(refusal({ websites: [{}] })).toBe("invalid configuration: comments.websites[0].name: is required");
    expect(refusal({ websites: [{ name: "blog", articles: ["ok", "not/ok"] }] })).toBe(
      'invalid configuration: comments.websites[0].articles[1]: must be 1 to 200 characters of A-Z a-z 0-9 . _ ~ - (got "not/ok")',
    );
    expect(refusal({ websites: [{ name: "blog" }, { name: "blog" }] })).toBe(
      'invalid configuration: comments.websites[1].name: must not repeat the name of another website (got "blog")',
    );
  });

  it("refuses origins that are not origins", () => {
    for (const origin of [
      "blog.example.org",
      "https://blog.example.org/path",
      "ftp://x.org",
      "https://u:p@x.org",
      "",
    ]) {
      expect(refusal({ websites: [{ name: "blog", "allowed-origins": [origin] }] })).toMatch(
        /comments\.websites\[0\]\.allowed-origins\[0\]: must be \* or an origin/,
      );
    }
  });

  it("checks the rate limit and TTL, and never echoes a secret", () => {
    expect(refusal({ "rate-limit": { comments: 0 } })).toMatch(
      /comments\.rate-limit\.comments: must be an integer between 1 and/,
    );
    expect(refusal({ "rate-limit": { per: "often" } })).toMatch(/comments\.rate-limit\.per: must be a duration/);
    expect(refusal({ challenge: { ttl: "10" } })).toMatch(/comments\.challenge\.ttl: must be a duration/);
    const message = refusal({ "admin-token": " padded-secret " });
    expect(message).toBe("invalid configuration: comments.admin-token: must not start or end with white space");
    expect(refusal({ challenge: { secret: "" } })).toBe(
      "invalid configuration: comments.challenge.secret: must not be empty",
    );
  });

  it("reads moderation modes, auto-approve as none or all, and refuses both together", () => {
    const modes = (websites: unknown) =>
      (parse({ websites }).websites as Array<{ moderation: string }>).map((website) => website.moderation);
    expect(
      modes([
        { name: "a" },
        { name: "b", "auto-approve": true },
        { name: "c", "auto-approve": false },
        { name: "d", moderation: "first" },
      ]),
    ).toEqual(["all", "none", "all", "first"]);
    expect(refusal({ websites: [{ name: "a", moderation: "none", "auto-approve": true }] })).toMatch(
      /comments\.websites\[0\]\.auto-approve: must not be set together with moderation/,
    );
    expect(refusal({ websites: [{ name: "a", moderation: "some" }] })).toMatch(/comments\.websites\[0\]\.moderation/);
  });

  it("reads spam and akismet, never echoing the key", () => {
    const section = parse({
      spam: { honeypot: false, "min-answer-time": "3s", "max-links": 0 },
      akismet: { key: "secret-key", url: "http://127.0.0.1:9/check" },
    });
    expect(section.spam).toEqual({
      honeypot: false,
      "min-answer-time": { text: "3s", milliseconds: 3000 },
      "max-links": 0,
    });
    expect(section.akismet).toEqual({ key: "secret-key", url: "http://127.0.0.1:9/check" });
    expect(parse({ akismet: { key: "k" } }).akismet).toEqual({
      key: "k",
      url: "https://rest.akismet.com/1.1/comment-check",
    });
    expect(refusal({ akismet: { url: "http://x/" } })).toMatch(/comments\.akismet\.key/);
    expect(refusal({ akismet: { key: "secret-key", url: "ftp://x" } })).not.toContain("secret-key");
    expect(refusal({ spam: { "max-links": -1 } })).toMatch(/comments\.spam\.max-links/);
  });

  it("checks that email names an email output and has moderators", () => {
    const outputs = {
      mail: { type: "email", "smtp-url": "smtp://127.0.0.1:2525", from: "vigie@example.org", to: ["ops@example.org"] },
      hook: { type: "webhook", url: "http://127.0.0.1:9/hook" },
    };
    const load = (email: unknown) => parseConfig({ outputs, comments: { email } }, {}, [commentsModule]);
    const message = (email: unknown) => {
      try {
        load(email);
      } catch (error) {
        if (error instanceof ConfigError) return error.message;
        throw error;
      }
      return "accepted";
    };
    expect(
      (load({ output: "mail", admin: ["mod@example.org"] }).modules.comments as unknown as { email: unknown }).email,
    ).toEqual({
      output: "mail",
      "notify-admin": "pending",
      admin: ["mod@example.org"],
    });
    expect(message({ output: "hook", admin: ["mod@example.org"] })).toMatch(
      /comments\.email\.output: must name an output of type email/,
    );
    expect(message({ output: "nothing", admin: ["mod@example.org"] })).toMatch(/comments\.email\.output/);
    expect(message({ output: "mail" })).toMatch(/comments\.email\.admin: must list at least one address/);
    expect(message({ output: "mail", "notify-admin": "none" })).toBe("accepted");
    expect(message({ output: "mail", admin: ["not an address"] })).toMatch(/comments\.email\.admin\[0\]/);
  });
});
