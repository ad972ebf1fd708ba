import { describe, expect, it } from "vitest";
import {
  containsRedacted,
  isSecretHeader,
  REDACTED,
  redactLabels,
  redactMessage,
  redactSecrets,
  redactUrlPasswords,
  restoreRedacted,
  UNRESOLVED_REDACTED,
} from "../../src/healthchecks/redaction.js";
import { validationError } from "../support/validation.js";

describe("secret headers (platform.md §8)", () => {
  it("are Authorization, Proxy-Authorization and Cookie, in any case", () => {
    for (const name of [
      "Authorization",
      "authorization",
      "AUTHORIZATION",
      "Proxy-Authorization",
      "proxy-authorization",
    ]) {
      expect(isSecretHeader(name)).toBe(true);
    }
    for (const name of ["Cookie", "cookie", "COOKIE"]) expect(isSecretHeader(name)).toBe(true);
  });

  it("are every name containing token, secret, key, password or auth, in any case", () => {
    const cases: Record<string, string[]> = {
      token: ["X-Token", "x-vault-token", "TOKEN", "Tokenized"],
      secret: ["X-Secret", "Client-SECRET-Id"],
      key: ["X-Api-Key", "apikey", "KEY", "X-Key-Id"],
      password: ["X-Password", "db-PASSWORD"],
      auth: ["X-Auth-User", "WWW-Authenticate", "Oauth2", "AUTH"],
    };
    for (const names of Object.values(cases)) for (const name of names) expect(isSecretHeader(name)).toBe(true);
  });

  it("are not other headers", () => {
    // Cookie is matched as a whole name, as platform.md §8 lists it.
    for (const name of ["Accept", "User-Agent", "Host", "X-Request-Id", "X-Cookie", "Content-Type", "Referer"]) {
      expect(isSecretHeader(name)).toBe(false);
    }
  });
});

describe("URL passwords (platform.md §8)", () => {
  it("are replaced, the user and the rest of the URL kept", () => {
    expect(redactUrlPasswords("https://ann:s3cret@example.org/x")).toBe(`https://ann:${REDACTED}@example.org/x`);
    expect(redactUrlPasswords("postgres://app:pw@db:5432/vigie?sslmode=require")).toBe(
      `postgres://app:${REDACTED}@db:5432/vigie?sslmode=require`,
    );
    expect(redactUrlPasswords("redis://:pw@cache:6379")).toBe(`redis://:${REDACTED}@cache:6379`);
    expect(redactUrlPasswords("//ann:pw@example.org")).toBe(`//ann:${REDACTED}@example.org`);
    // A password with an unencoded @ or : is hidden whole, up to the host.
    expect(redactUrlPasswords("https://ann:p@ss:w@example.org/x")).toBe(`https://ann:${REDACTED}@example.org/x`);
  });

  it("are found anywhere in a text, each URL on its own", () => {
    expect(
      redactUrlPasswords('{"primary":"https://a:one@h1/x","backup":"https://b:two@h2/y"} and ftp://c:three@h3 too'),
    ).toBe(
      `{"primary":"https://a:${REDACTED}@h1/x","backup":"https://b:${REDACTED}@h2/y"} and ftp://c:${REDACTED}@h3 too`,
    );
    expect(redactUrlPasswords("--url=https://ann:pw@example.org")).toBe(`--url=https://ann:${REDACTED}@example.org`);
  });

  it("leave URLs without a password, and other text, as they are", () => {
    for (const text of [
      "https://ann@example.org/x",
      "https://ann:@example.org/x",
      "https://example.org:8443/x",
      "https://example.org:8443/a@b",
      "https://example.org/?u=a:b@c",
      "mail ann@example.org",
      "a:b@c",
      "",
    ]) {
      expect(redactUrlPasswords(text)).toBe(text);
    }
  });

  it("are redacted once: a redacted text does not change again", () => {
    const once = redactUrlPasswords("https://ann:pw@example.org");
    expect(redactUrlPasswords(once)).toBe(once);
  });
});

describe("redactSecrets", () => {
  it("redacts secret header values whole and URL passwords in every other string, keeping keys", () => {
    const definition = {
      name: "web",
      headers: {
        Authorization: "Bearer t0ken",
        cookie: "session=1",
        "X-API-KEY": "k",
        Accept: "text/html",
        Referer: "https://ann:pw@example.org/",
      },
      query: { "https://u:p@x": "https://u:p@x" },
      arguments: ["https://a:b@c", 3],
      port: 443,
      insecure: false,
    };
    expect(redactSecrets(definition)).toEqual({
      name: "web",
      headers: {
        Authorization: REDACTED,
        cookie: REDACTED,
        "X-API-KEY": REDACTED,
        Accept: "text/html",
        Referer: `https://ann:${REDACTED}@example.org/`,
      },
      query: { "https://u:p@x": `https://u:${REDACTED}@x` },
      arguments: [`https://a:${REDACTED}@c`, 3],
      port: 443,
      insecure: false,
    });
    // The input is untouched.
    expect(definition.headers.Authorization).toBe("Bearer t0ken");
  });

  it("replaces whole what is nested deeper than 32 levels, however deep (a value quoted in an error)", () => {
    let deep: unknown = "https://a:pw@b";
    for (let level = 0; level < 100_000; level += 1) deep = [deep];
    const redacted = redactSecrets(deep);
    let shallow: unknown = redacted;
    for (let level = 0; level < 32; level += 1) shallow = (shallow as unknown[])[0];
    expect(shallow).toBe(REDACTED);
    expect(redactSecrets([[["https://a:pw@b"]]])).toEqual([[[`https://a:${REDACTED}@b`]]]);
  });

  it("redacts label values", () => {
    expect(redactLabels({ repo: "https://ann:pw@git/x", env: "prod" })).toEqual({
      repo: `https://ann:${REDACTED}@git/x`,
      env: "prod",
    });
    expect(redactLabels(undefined)).toBeUndefined();
  });
});

describe("redactMessage", () => {
  it("hides URL passwords and the check's own secret header values", () => {
    const headers = { Authorization: "Bearer abcdefgh", "X-Api-Key": "k3y-value", Accept: "text/plain" };
    expect(redactMessage("status 500. Body: 'you sent Bearer abcdefgh and k3y-value, text/plain'", headers)).toBe(
      `status 500. Body: 'you sent ${REDACTED} and ${REDACTED}, text/plain'`,
    );
    expect(redactMessage("token abcdefgh refused", headers)).toBe(`token ${REDACTED} refused`);
    expect(redactMessage("curl: cannot reach https://ann:pw@example.org")).toBe(
      `curl: cannot reach https://ann:${REDACTED}@example.org`,
    );
    // Values shorter than 4 characters would hide ordinary words.
    expect(redactMessage("status 500", { "X-Key": "500" })).toBe("status 500");
  });
});

describe("restoreRedacted (GET → edit → POST round-trips)", () => {
  const stored = {
    name: "web",
    description: "mirror of https://ann:pw@example.org",
    headers: { Authorization: "Bearer t0ken", "X-Env": "prod" },
    arguments: ["--url", "https://bob:s3cret@example.org/x"],
    labels: { repo: "https://c:d@git/x" },
  };

  it("puts back the stored value wherever its redacted form was posted", () => {
    const posted = redactSecrets(stored);
    expect(containsRedacted(posted)).toBe(true);
    expect(restoreRedacted(posted, stored)).toEqual(stored);
    // Edited elsewhere: the edits stay, the secrets come back.
    expect(restoreRedacted({ ...posted, headers: { ...posted.headers, "X-Env": "test" } }, stored)).toEqual({
      ...stored,
      headers: { Authorization: "Bearer t0ken", "X-Env": "test" },
    });
  });

  it("matches a header name in another case", () => {
    expect(restoreRedacted({ headers: { authorization: REDACTED } }, stored)).toEqual({
      headers: { authorization: "Bearer t0ken" },
    });
  });

  it("keeps values sent in clear, even where a secret was stored", () => {
    expect(restoreRedacted({ headers: { Authorization: "Bearer new" } }, stored)).toEqual({
      headers: { Authorization: "Bearer new" },
    });
    expect(restoreRedacted({ description: "new" }, undefined)).toEqual({ description: "new" });
  });

  it("refuses a <redacted> without an existing check, or whose stored value differs, naming the field", () => {
    const refusal = (posted: unknown, existing: unknown) => validationError(() => restoreRedacted(posted, existing));
    expect(refusal({ headers: { Authorization: REDACTED } }, undefined).message).toBe(
      `headers.Authorization: ${UNRESOLVED_REDACTED}`,
    );
    expect(UNRESOLVED_REDACTED).toBe(
      "<redacted> does not match the stored value of an existing healthcheck of this name; send the value itself",
    );
    // Nothing at that place.
    expect(refusal({ headers: { "X-Token": REDACTED } }, stored).path).toBe("headers.X-Token");
    // A non-secret header is shown as it is: <redacted> is not its redacted form.
    expect(refusal({ headers: { "X-Env": REDACTED } }, stored).path).toBe("headers.X-Env");
    // The redacted form must be exactly the posted string.
    expect(refusal({ headers: { Authorization: `Bearer ${REDACTED}` } }, stored).path).toBe("headers.Authorization");
    expect(refusal({ description: `mirror of https://eve:${REDACTED}@example.org` }, stored).path).toBe("description");
    // Same index in arrays.
    expect(refusal({ arguments: [`https://bob:${REDACTED}@example.org/x`, "--url"] }, stored).path).toBe(
      "arguments[0]",
    );
    expect(refusal({ labels: { other: `https://c:${REDACTED}@git/x` } }, stored).path).toBe("labels.other");
    // The error carries no value.
    expect(refusal({ headers: { Authorization: REDACTED } }, {}).hasValue).toBe(false);
  });

  it("resolves a stored string that itself contains <redacted>", () => {
    const literal = { description: `we write ${REDACTED} here` };
    expect(restoreRedacted(literal, literal)).toEqual(literal);
  });
});
