import { describe, expect, it } from "vitest";
import { requestHeaders, splitCredentials, USER_AGENT } from "../../../src/platform/outputs/http-target.js";

describe("splitCredentials", () => {
  it("turns user:password@ into a Basic authorization (RFC 7617) and removes it from the URL", () => {
    const { url, authorization } = splitCredentials("https://us%40er:p%3Ass%20w@example.org:8443/hook?x=1");
    expect(url.href).toBe("https://example.org:8443/hook?x=1");
    expect(authorization).toBe(`Basic ${Buffer.from("us@er:p:ss w").toString("base64")}`);
  });

  it("accepts a user without password, and a malformed escape as written", () => {
    expect(splitCredentials("http://token@127.0.0.1/").authorization).toBe(
      `Basic ${Buffer.from("token:").toString("base64")}`,
    );
    expect(splitCredentials("http://a%zz:b@127.0.0.1/").authorization).toBe(
      `Basic ${Buffer.from("a%zz:b").toString("base64")}`,
    );
  });

  it("leaves a URL without user info alone", () => {
    const { url, authorization } = splitCredentials("http://127.0.0.1:9093");
    expect(url.href).toBe("http://127.0.0.1:9093/");
    expect(authorization).toBeUndefined();
  });
});

describe("requestHeaders", () => {
  it("sends the configured headers, names in lower case; the protocol's win over configured ones of the same name", () => {
    expect(
      requestHeaders(
        { "X-Scope-OrgID": "t1", "Content-Type": "text/html", Title: "Alert" },
        { "content-type": "application/x-protobuf" },
        undefined,
      ),
    ).toEqual({
      "x-scope-orgid": "t1",
      "content-type": "application/x-protobuf",
      title: "Alert",
      "user-agent": USER_AGENT,
    });
  });

  it("adds the URL's authorization unless one is configured, and keeps a configured User-Agent", () => {
    expect(requestHeaders({}, {}, "Basic eDp5")).toEqual({ authorization: "Basic eDp5", "user-agent": "vigie" });
    expect(requestHeaders({ AUTHORIZATION: "Bearer t", "User-Agent": "me" }, {}, "Basic eDp5")).toEqual({
      authorization: "Bearer t",
      "user-agent": "me",
    });
  });
});
