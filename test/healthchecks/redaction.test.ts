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

describe("secret headers (docs/security.md)", () => {
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
    // Cookie is matched as a whole name, as docs/security.md lists it.
    for (const name of ["Accept", "User-Agent", "Host", "X-Request-Id", "X-Cookie", "Content-Type", "Referer"]) {
      expect(isSecretHeader(name)).toBe(false);
    }
  });
});

describe("URL passwords (docs/security.md)", () => {
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
    expect(redactMessage("status 500. Body: 'you sent Bearer abcdefgh and k3y-value, text/plain'", { headers })).toBe(
      `status 500. Body: 'you sent ${REDACTED} and ${REDACTED}, text/plain'`,
    );
    expect(redactMessage("token abcdefgh refused", { headers })).toBe(`token ${REDACTED} refused`);
    expect(redactMessage("curl: cannot reach https://ann:pw@example.org")).toBe(
      `curl: cannot reach https://ann:${REDACTED}@example.org`,
    );
    // Values shorter than 4 characters would hide ordinary words.
    expect(redactMessage("status 500", { headers: { "X-Key": "500" } })).toBe("status 500");
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

describe("secrets outside headers (query parameters, path, JSON body fields)", () => {
  const body =
    '{\n  "user": "ann",\n  "Api_Key": "k-123",\n  "nested": {"password": "stays"},\n  "n": 1.50,\n  "token": {"a": [1, "}"]}\n}';
  const stored = {
    name: "web",
    path: "/v1/items?page=2&access_token=t%20ok&x=https://u:p@h#top",
    query: { api_key: "q-secret", lang: "en", "https://u:p@x": "https://u:p@x" },
    body,
  };

  it("redact query values whose name follows the header rule, keeping the others", () => {
    expect(redactSecrets(stored).query).toEqual({
      api_key: REDACTED,
      lang: "en",
      "https://u:p@x": `https://u:${REDACTED}@x`,
    });
  });

  it("redact the path's secret query parameters and URL passwords, the rest kept", () => {
    expect(redactSecrets(stored).path).toBe(`/v1/items?page=2&access_token=${REDACTED}&x=https://u:${REDACTED}@h#top`);
    expect(redactSecrets({ path: "/plain" }).path).toBe("/plain");
    expect(redactSecrets({ path: "/x?Password=a&password" }).path).toBe(`/x?Password=${REDACTED}&password`);
    expect(redactSecrets({ path: "/x?my%5Ftoken=a+b&secret" }).path).toBe(`/x?my%5Ftoken=${REDACTED}&secret`);
  });

  it("redact the top-level secret fields of a JSON object body whatever their type, every other byte kept", () => {
    expect(redactSecrets(stored).body).toBe(
      '{\n  "user": "ann",\n  "Api_Key": "<redacted>",\n  "nested": {"password": "stays"},\n  "n": 1.50,\n  "token": "<redacted>"\n}',
    );
    // Not a JSON object: an array, a form, invalid JSON, text.
    for (const other of ['[{"token": "t"}]', "token=t&user=u", '{"token": "t"', "hello"]) {
      expect(redactSecrets({ body: other }).body).toBe(other);
    }
    // A repeated name is redacted each time; escapes in names are read.
    expect(redactSecrets({ body: '{"t\\u006fken": 1, "token": 2}' }).body).toBe(
      `{"t\\u006fken": "${REDACTED}", "token": "${REDACTED}"}`,
    );
    // Only definition fields: a label named body or path is a label.
    expect(redactSecrets({ labels: { body: '{"token": "t"}', path: "/x?token=t" } })).toEqual({
      labels: { body: '{"token": "t"}', path: "/x?token=t" },
    });
  });

  it("round-trip: <redacted> posted back keeps the stored values, other edits of the body are kept", () => {
    const posted = redactSecrets(stored);
    expect(containsRedacted(posted)).toBe(true);
    expect(restoreRedacted(posted, stored)).toEqual(stored);
    const edited = { ...posted, body: (posted.body as string).replace('"ann"', '"bob"').replace("1.50", "2") };
    expect(restoreRedacted(edited, stored)).toEqual({
      ...stored,
      body: body.replace('"ann"', '"bob"').replace("1.50", "2"),
    });
    // Fields reordered and reformatted: each takes its own stored value.
    expect(restoreRedacted({ body: `{"token":"${REDACTED}","Api_Key":"${REDACTED}"}` }, stored)).toEqual({
      body: '{"token":{"a": [1, "}"]},"Api_Key":"k-123"}',
    });
    const refusal = (value: unknown) => validationError(() => restoreRedacted(value, stored));
    // A secret field the stored body does not have, or a non-secret field said <redacted>.
    expect(refusal({ body: `{"password": "${REDACTED}"}` }).path).toBe("body");
    expect(refusal({ body: `{"user": "${REDACTED}"}` }).path).toBe("body");
    expect(refusal({ query: { lang: REDACTED } }).path).toBe("query.lang");
    // The path round-trips whole.
    expect(refusal({ path: `/v2?access_token=${REDACTED}` }).path).toBe("path");
  });

  it("are scrubbed from messages as sent, percent-encoded, form-encoded and HTML-escaped", () => {
    const source = {
      path: "/x?access_token=p%40th%20s3cret",
      query: { api_key: "q&s3cret" },
      body: '{"password": "b0dy-\\"s3cret\\"", "user": "ann"}',
    };
    const echoes = [
      "/x?access_token=p%40th+s3cret&api_key=q%26s3cret",
      "/x?access_token=p%40th%20s3cret",
      "raw p@th s3cret and q&s3cret",
      "html q&amp;s3cret",
      'body {"password": "b0dy-\\"s3cret\\"", "user": "ann"}',
      "html body {&quot;password&quot;: &quot;b0dy-\\&quot;s3cret\\&quot;&quot;}",
      'decoded b0dy-"s3cret"',
    ];
    for (const echo of echoes) {
      const message = redactMessage(`failed: ${echo}`, source);
      expect(message, echo).not.toContain("s3cret");
      expect(message).toContain(REDACTED);
    }
    expect(redactMessage('failed: {"user": "ann"}', source)).toBe('failed: {"user": "ann"}');
  });
});
