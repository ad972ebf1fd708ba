import { describe, expect, it } from "vitest";
import { pingUrl } from "../../../src/healthchecks/run/job.js";
import { OutputTail } from "../../../src/healthchecks/run/output-tail.js";

describe("OutputTail", () => {
  it("keeps everything under the limit, in order", () => {
    const tail = new OutputTail(10);
    tail.write(Buffer.from("abc"));
    tail.write(Buffer.from("def"));
    expect(tail.bytes().toString()).toBe("abcdef");
    expect(tail.truncated).toBe(false);
  });

  it("keeps only the last bytes past the limit", () => {
    const tail = new OutputTail(10);
    for (let index = 0; index < 100; index++) tail.write(Buffer.from(`${index % 10}`));
    tail.write(Buffer.from("0123456789ABCDEF"));
    expect(tail.bytes().toString()).toBe("6789ABCDEF");
    expect(tail.truncated).toBe(true);
  });

  it("does not start in the middle of a UTF-8 character", () => {
    const tail = new OutputTail(4);
    tail.write(Buffer.from("aé€")); // 1 + 2 + 3 bytes: the last 4 start inside é
    expect(tail.bytes().toString()).toBe("€");
  });
});

describe("pingUrl", () => {
  it("adds the ping path to the base URL, keeping a path prefix", () => {
    expect(pingUrl("http://127.0.0.1:8080", "k".repeat(22), "start", "r")).toBe(
      `http://127.0.0.1:8080/ping/${"k".repeat(22)}/start?rid=r`,
    );
    expect(pingUrl("https://example.com/vigie/", "key", "0", "r")).toBe("https://example.com/vigie/ping/key/0?rid=r");
  });
});
