import { describe, expect, it } from "vitest";
import { escapeHtml } from "../../src/platform/html.js";

describe("escapeHtml", () => {
  it("escapes the five characters & < > \" '", () => {
    expect(escapeHtml(`&<>"'`)).toBe("&amp;&lt;&gt;&quot;&#39;");
    expect(escapeHtml(`<script>alert("x" + 'y')</script>`)).toBe(
      "&lt;script&gt;alert(&quot;x&quot; + &#39;y&#39;)&lt;/script&gt;",
    );
  });

  it("leaves everything else alone, and escapes again what was escaped", () => {
    expect(escapeHtml("héllo wörld 👋\n\ttab / = ` ")).toBe("héllo wörld 👋\n\ttab / = ` ");
    expect(escapeHtml("&amp;")).toBe("&amp;amp;");
    expect(escapeHtml("")).toBe("");
  });
});
