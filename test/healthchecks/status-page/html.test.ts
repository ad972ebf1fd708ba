/**
 * The status page's style: allowed by its hash, nothing from another origin.
 */
import { describe, expect, it } from "vitest";
import { STATUS_CSP, STATUS_CSS } from "../../../src/healthchecks/status-page/html.js";

describe("the page's style and script", () => {
  it("allows the inline style by its hash, and nothing from another origin", async () => {
    const { createHash } = await import("node:crypto");
    const hash = createHash("sha256").update(STATUS_CSS).digest("base64");
    expect(STATUS_CSP).toBe(
      `default-src 'none'; script-src 'self'; style-src 'sha256-${hash}'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    );
    expect(STATUS_CSS).not.toMatch(/url\(|@import/);
  });
});
