/**
 * A crate's README rendered for its page (docs/cargo.md, "Web pages"): Markdown becomes HTML, and
 * whatever a hostile publisher writes (raw HTML, `javascript:` and `data:` links, event handler
 * attributes) comes out inert.
 */
import { describe, expect, it } from "vitest";
import { isAllowedLink, MAX_RENDERED_README, renderReadme } from "../../../src/registry/cargo/pages/readme.js";

/** Every start tag of the HTML with its attributes, lower case. */
function tags(html: string): string[] {
  return [...html.matchAll(/<([a-z][a-z0-9]*)\b[^>]*>/gi)].map((match) => match[0].toLowerCase());
}

describe("README rendering", () => {
  it("renders Markdown: headings two levels down, code, tables, lists, emphasis", () => {
    const html = renderReadme(
      "# mycrate\n\nA *fast* parser.\n\n```rust\nlet x = 1;\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n",
    );
    expect(html).toContain("<h3>mycrate</h3>");
    expect(html).toContain("<em>fast</em>");
    expect(html).toContain('<pre><code class="language-rust">let x = 1;\n</code></pre>');
    expect(html).toContain("<table>");
    expect(html).toContain("<li>one</li>");
    expect(renderReadme("###### deepest")).toContain("<h6>deepest</h6>");
    expect(renderReadme("#### fourth")).toContain("<h6>fourth</h6>");
  });

  it("gives links rel=nofollow ugc noopener and keeps http, https and mailto ones", () => {
    const html = renderReadme("[docs](https://docs.example.org/x) <mailto:a@example.org> see http://example.org");
    expect(html).toContain('<a href="https://docs.example.org/x" rel="nofollow ugc noopener">docs</a>');
    expect(html).toContain('<a href="mailto:a@example.org" rel="nofollow ugc noopener">');
    expect(html).toContain('<a href="http://example.org" rel="nofollow ugc noopener">');
  });

  it("shows raw HTML as text: no script, no element from the README, no event handler", () => {
    const html = renderReadme(
      '<script>alert(1)</script>\n\n<img src=x onerror="alert(2)">\n\nText <b onclick="alert(3)">bold</b> <iframe src="https://evil.example"></iframe>\n',
    );
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    for (const tag of tags(html)) {
      // The URL inside the iframe's text is made a link by linkify: a link, not an iframe.
      expect(tag).toMatch(/^<(p|code|pre)>$|^<a href="https:\/\/evil\.example" rel="nofollow ugc noopener">$/);
    }
    expect(html).not.toMatch(/<(script|img|iframe|b)\b/i);
  });

  it("makes no link of javascript:, data:, vbscript: or file: URLs, whatever their case and blanks", () => {
    const hostile = [
      "[a](javascript:alert(1))",
      "[b](JaVaScRiPt:alert(1))",
      "[c](java\tscript:alert(1))",
      "[d]( javascript:alert(1))",
      "[e](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
      "[f](data:image/png;base64,iVBORw0KGgo=)",
      "[g](vbscript:msgbox)",
      "[h](file:///etc/passwd)",
      "<javascript:alert(1)>",
      "[i][ref]\n\n[ref]: javascript:alert(1)",
      "![img](javascript:alert(1))",
      "![img](data:image/svg+xml;base64,PHN2Zz4=)",
      "[j](&#106;avascript:alert(1))",
      "[k](%6Aavascript:alert(1))",
    ];
    for (const markdown of hostile) {
      const html = renderReadme(markdown);
      expect(html, markdown).not.toMatch(/href="(?!https?:|mailto:)/i);
      expect(html, markdown).not.toMatch(/<img/i);
    }
  });

  it("keeps the text of relative links without href, and turns images into links to them", () => {
    expect(renderReadme("[the licence](LICENSE) and [usage](#usage)")).toBe(
      "<p><a>the licence</a> and <a>usage</a></p>\n",
    );
    expect(renderReadme("![build status](https://ci.example.org/badge.svg)")).toBe(
      '<p><a href="https://ci.example.org/badge.svg" rel="nofollow ugc noopener">[image: build status]</a></p>\n',
    );
    expect(renderReadme("![logo](logo.png)")).toBe("<p>[image: logo]</p>\n");
  });

  it("escapes quotes in URLs and attributes", () => {
    const html = renderReadme('[x](https://example.org/"onmouseover="alert(1))');
    expect(html).not.toContain('"onmouseover="');
    expect(renderReadme('```"><script>\ncode\n```')).not.toContain("<script>");
  });

  it("cuts a README longer than the bound, with a note", () => {
    const html = renderReadme(`# Long\n\n${"word ".repeat(MAX_RENDERED_README / 4)}`);
    expect(html).toContain("the rest is not shown");
  });

  it("allows links with no scheme or a safe one only", () => {
    expect(isAllowedLink("https://x")).toBe(true);
    expect(isAllowedLink("docs/x.md")).toBe(true);
    expect(isAllowedLink("\u0000javascript:x")).toBe(false);
    expect(isAllowedLink("ftp://x")).toBe(false);
  });
});
