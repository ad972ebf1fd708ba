/**
 * The registry pages' content from plain data (src/registry/cargo/pages): which version a crate
 * page shows, dependencies read back from an index line, the list's page links, every text escaped.
 */
import { describe, expect, it } from "vitest";
import { cratePage, dependenciesOf, shownVersion } from "../../../src/registry/cargo/pages/data.js";
import { crateView, listView } from "../../../src/registry/cargo/pages/view.js";

const version = (vers: string, yanked = false) => ({ vers, yanked, downloads: 1, publishedAt: 0, publishedBy: "a" });

describe("the registry pages' content", () => {
  it("shows the highest version that is not yanked, else the last published", () => {
    expect(shownVersion([version("1.0.0"), version("1.10.0"), version("1.9.0"), version("2.0.0", true)])?.vers).toBe(
      "1.10.0",
    );
    expect(shownVersion([version("0.2.0", true), version("0.1.0", true)])?.vers).toBe("0.1.0");
    expect(shownVersion([])).toBeUndefined();
  });

  it("reads dependencies from an index line: real names of renamed ones, kinds, crates.io, targets", () => {
    const line = JSON.stringify({
      name: "c",
      vers: "1.0.0",
      deps: [
        {
          name: "json",
          package: "serde_json",
          req: "^1",
          kind: "normal",
          optional: true,
          registry: "https://github.com/rust-lang/crates.io-index",
        },
        { name: "local", req: "^0.1", kind: "build", optional: false, target: "cfg(unix)" },
        { name: 3 },
      ],
    });
    expect(dependenciesOf(line)).toEqual([
      { name: "serde_json", req: "^1", kind: "normal", optional: true, target: null, cratesIo: true },
      { name: "local", req: "^0.1", kind: "build", optional: false, target: "cfg(unix)", cratesIo: false },
    ]);
    expect(dependenciesOf("not json")).toEqual([]);
  });

  it("links the previous and next pages of a search, keeping the words", () => {
    const html = listView({ query: "a b&c", page: 2, perPage: 50, total: 120, crates: [] });
    expect(html).toContain('<a href="/registry?q=a+b%26c" rel="prev">Previous page</a>');
    expect(html).toContain('<a href="/registry?q=a+b%26c&amp;page=3" rel="next">Next page</a>');
    expect(html).toContain("120 crates, page 2 of 3.");
    expect(listView({ query: "", page: 1, perPage: 50, total: 50, crates: [] })).not.toContain("<nav");
  });

  it("escapes every text of a crate page and keeps only http(s) links from the metadata", () => {
    const page = cratePage({
      name: "c",
      versions: [version("1.0.0")],
      shown: version("1.0.0"),
      metadata: {
        description: "<b>bold</b>",
        license: "MIT<script>",
        repository: "javascript:alert(1)",
        homepage: "https://example.org/?a=1&b=2",
        keywords: ["<k>"],
      },
      indexLine: "{}",
      readmeHtml: null,
      owners: [{ login: "<o>", name: '"quoted"' }],
      publicUrl: "http://vigie.test",
    });
    expect(page.links).toEqual([{ label: "Homepage", url: "https://example.org/?a=1&b=2" }]);
    const html = crateView({ ...page, olderVersions: 1234 });
    expect(html).toContain("&lt;b&gt;bold&lt;/b&gt;");
    expect(html).toContain("MIT&lt;script&gt;");
    expect(html).toContain('href="https://example.org/?a=1&amp;b=2"');
    expect(html).not.toContain("javascript:");
    expect(html).toContain('&lt;o&gt; <span class="muted">(&quot;quoted&quot;)</span>');
    expect(html).toContain("And 1\u202f234 older versions.");
  });
});
