/**
 * The mirror's pure parts (docs/cargo.md, "Using the mirror for CI"): the `dl` template expanded as
 * cargo expands it, when a copy is revalidated and with which headers, what an upstream status
 * means, the reading of upstream index lines, single-flight, and the upstream client's one retry of
 * a GET whose connection was reset.
 */
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { dependencyPrefix, expandDownloadUrl } from "../../../../src/registry/cargo/mirror/download-url.js";
import { conditionalHeaders, isStale, verdictOf } from "../../../../src/registry/cargo/mirror/freshness.js";
import { checkIndexFile, findVersion } from "../../../../src/registry/cargo/mirror/index-lines.js";
import { SingleFlight } from "../../../../src/registry/cargo/mirror/single-flight.js";
import { readBounded, Upstream } from "../../../../src/registry/cargo/mirror/upstream.js";

const CKSUM = createHash("sha256").update("crate").digest("hex");

describe("expandDownloadUrl (cargo's dl template)", () => {
  const serde = { name: "Serde", vers: "1.0.0", cksum: CKSUM };

  it("appends /{crate}/{version}/download to a dl without markers, as for crates.io", () => {
    expect(expandDownloadUrl("https://static.crates.io/crates", serde).href).toBe(
      "https://static.crates.io/crates/Serde/1.0.0/download",
    );
    // Nothing trimmed: cargo appends to the text as it is.
    expect(expandDownloadUrl("http://h/api/v1/crates/", serde).href).toBe(
      "http://h/api/v1/crates//Serde/1.0.0/download",
    );
  });

  it("replaces every marker and appends nothing when one is present", () => {
    const dl = "https://dl.example/{prefix}/{lowerprefix}/{crate}/{crate}-{version}.crate?sum={sha256-checksum}";
    expect(expandDownloadUrl(dl, serde).href).toBe(
      `https://dl.example/Se/rd/se/rd/Serde/Serde-1.0.0.crate?sum=${CKSUM}`,
    );
    expect(expandDownloadUrl("https://dl.example/{sha256-checksum}", serde).href).toBe(`https://dl.example/${CKSUM}`);
    expect(expandDownloadUrl("https://dl.example/v/{version}", serde).href).toBe("https://dl.example/v/1.0.0");
  });

  it("builds the prefix of 1, 2, 3 and longer names as cargo does, case kept", () => {
    expect(["a", "Ab", "Abc", "AbCd", "serde_json"].map(dependencyPrefix)).toEqual(["1", "2", "3/A", "Ab/Cd", "se/rd"]);
    const dl = "https://dl.example/{prefix}/x/{lowerprefix}";
    expect(expandDownloadUrl(dl, { ...serde, name: "Abc" }).pathname).toBe("/3/A/x/3/a");
  });

  it("refuses a template that is not http or https", () => {
    expect(() => expandDownloadUrl("file:///etc/{crate}", serde)).toThrow("must be http or https");
    expect(() => expandDownloadUrl("not a url", serde)).toThrow();
  });
});

describe("revalidation", () => {
  const copy = { upstreamEtag: '"v1"', upstreamLastModified: "Thu, 01 Jan 2026 00:00:00 GMT", fetchedAt: 1_000 };

  it("serves a copy until max-age has passed, then revalidates (and after a clock going back)", () => {
    expect(isStale(copy, 1_000, 600_000)).toBe(false);
    expect(isStale(copy, 600_999, 600_000)).toBe(false);
    expect(isStale(copy, 601_000, 600_000)).toBe(true);
    expect(isStale(copy, 999, 600_000)).toBe(true);
    // max-age 0: every request asks the upstream.
    expect(isStale(copy, 1_000, 0)).toBe(true);
  });

  it("sends the upstream's validators back, and none without a copy", () => {
    expect(conditionalHeaders(copy)).toEqual({
      "if-none-match": '"v1"',
      "if-modified-since": "Thu, 01 Jan 2026 00:00:00 GMT",
    });
    expect(conditionalHeaders({ fetchedAt: 1 })).toEqual({});
    expect(conditionalHeaders(undefined)).toEqual({});
  });

  it("reads an upstream status: new bytes, confirmed, gone or failed", () => {
    expect(verdictOf(200, true)).toBe("replace");
    expect(verdictOf(304, true)).toBe("confirm");
    expect(verdictOf(304, false)).toBe("failed");
    expect(verdictOf(404, true)).toBe("gone");
    expect(verdictOf(410, false)).toBe("gone");
    for (const status of [301, 401, 429, 500, 502, 503]) expect(verdictOf(status, true)).toBe("failed");
  });
});

describe("upstream index lines", () => {
  const line = (fields: Record<string, unknown>) =>
    JSON.stringify({ name: "foo_bar", vers: "1.0.0", deps: [], cksum: CKSUM, features: {}, yanked: false, ...fields });
  const file = (...lines: string[]) => Buffer.from(`${lines.join("\n")}\n`);

  it("accepts lines of the crate asked for, whatever its case and - or _", () => {
    const body = file(line({}), line({ name: "Foo-Bar", vers: "1.1.0-beta.1+build.5" }));
    expect(() => checkIndexFile(body, "foo-bar")).not.toThrow();
    expect(findVersion(body, "foo-bar", "1.1.0-beta.1+build.5")).toEqual({
      name: "Foo-Bar",
      vers: "1.1.0-beta.1+build.5",
      cksum: CKSUM,
    });
    expect(findVersion(body, "foo-bar", "2.0.0")).toBeUndefined();
    // 1.0.0 is a prefix of 1.0.0-rc.1's text: compared whole.
    expect(findVersion(file(line({ vers: "1.0.0-rc.1" })), "foo-bar", "1.0.0")).toBeUndefined();
  });

  it("refuses a line of another crate, a bad version, a bad checksum or no JSON", () => {
    expect(() => checkIndexFile(file(line({}), line({ name: "other" })), "foo-bar")).toThrow(
      'line 2 is about crate "other", not foo-bar',
    );
    expect(() => checkIndexFile(file(line({ vers: "../../etc" })), "foo-bar")).toThrow("line 1: invalid version");
    expect(() => checkIndexFile(file(line({ name: "../x" })), "foo-bar")).toThrow("line 1: invalid crate name");
    expect(() => checkIndexFile(file(line({ cksum: "ABC" })), "foo-bar")).toThrow("cksum is not a SHA-256");
    expect(() => checkIndexFile(file("<html>"), "foo-bar")).toThrow("line 1 is not JSON");
    expect(() => checkIndexFile(file("[1]"), "foo-bar")).toThrow("line 1 is not an object");
  });
});

describe("SingleFlight", () => {
  it("runs one call per key at a time and shares its result and its failure", async () => {
    const flights = new SingleFlight<number>(10);
    let calls = 0;
    let release: (value: number) => void = () => {};
    const work = () => {
      calls += 1;
      return new Promise<number>((resolve) => {
        release = resolve;
      });
    };
    const all = Array.from({ length: 50 }, () => flights.run("k", work));
    expect(calls).toBe(1);
    expect(flights.size).toBe(1);
    release(7);
    expect(await Promise.all(all)).toEqual(Array(50).fill(7));
    expect(flights.size).toBe(0);
    // Over: the next call runs again.
    const failing = flights.run("k", () => Promise.reject(new Error("upstream down")));
    const shared = flights.run("k", work);
    await expect(failing).rejects.toThrow("upstream down");
    await expect(shared).rejects.toThrow("upstream down");
    expect(calls).toBe(1);
  });

  it("refuses a new key past its bound instead of queueing it", async () => {
    const flights = new SingleFlight<void>(2);
    const never = () => new Promise<void>(() => {});
    void flights.run("a", never);
    void flights.run("b", never);
    // A key in flight is still shared.
    expect(flights.run("a", never)).toBeInstanceOf(Promise);
    expect(() => flights.run("c", never)).toThrow("fetching 2 files from its upstream already");
  });
});

describe("Upstream", () => {
  /** A server that resets the connection of the first `resets` requests, then answers 200 "ok". */
  const resetting = async (resets: number) => {
    let seen = 0;
    const server = createServer((_request, response) => {
      seen += 1;
      if (seen <= resets) response.socket?.resetAndDestroy();
      else response.end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return { url: new URL(`http://127.0.0.1:${port}/index/3/f/foo`), server, seen: () => seen };
  };

  it("sends a GET once more when its connection is reset before any answer", async () => {
    const { url, server, seen } = await resetting(1);
    const upstream = new Upstream();
    try {
      const answer = await upstream.get(url);
      expect(answer.status).toBe(200);
      expect(await readBounded(answer, 100)).toEqual(Buffer.from("ok"));
      expect(seen()).toBe(2);
    } finally {
      await upstream.close();
      server.close();
    }
  });

  it("gives up after a second reset", async () => {
    const { url, server, seen } = await resetting(2);
    const upstream = new Upstream();
    try {
      await expect(upstream.get(url)).rejects.toMatchObject({ code: "ECONNRESET" });
      expect(seen()).toBe(2);
    } finally {
      await upstream.close();
      server.close();
    }
  });

  it("sends nothing once closed, even when closed before its first request", async () => {
    const upstream = new Upstream();
    await upstream.close();
    // No connection is tried: the port is never listened on (a request would fail otherwise).
    await expect(upstream.get(new URL("http://127.0.0.1:9/config.json"))).rejects.toThrow(/destroyed/);
  });
});
