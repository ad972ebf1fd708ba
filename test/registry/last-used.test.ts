import { describe, expect, it } from "vitest";
import { LastUsedRecorder } from "../../src/registry/last-used.js";

describe("last-used recorder", () => {
  it("writes at most once a minute per token, without waiting", async () => {
    const writes: Array<[string, number]> = [];
    const recorder = new LastUsedRecorder({
      write: async (tokenId, at) => {
        writes.push([tokenId, at]);
      },
      onError: () => undefined,
    });
    recorder.used("t1", 0);
    recorder.used("t1", 59_999);
    recorder.used("t2", 10);
    recorder.used("t1", 60_000);
    await recorder.flush();
    expect(writes).toEqual([
      ["t1", 0],
      ["t2", 10],
      ["t1", 60_000],
    ]);
  });

  it("writes nothing within a minute of a time already stored", async () => {
    const writes: number[] = [];
    const recorder = new LastUsedRecorder({ write: async (_id, at) => void writes.push(at), onError: () => undefined });
    recorder.known("t1", 100_000);
    recorder.known("t2", null);
    recorder.used("t1", 130_000);
    recorder.used("t2", 130_000);
    recorder.used("t1", 160_000);
    await recorder.flush();
    expect(writes).toEqual([130_000, 160_000]);
  });

  it("reports a failed write and retries on the next use", async () => {
    const errors: string[] = [];
    let fail = true;
    const writes: number[] = [];
    const recorder = new LastUsedRecorder({
      write: async (_id, at) => {
        if (fail) throw new Error("database down");
        writes.push(at);
      },
      onError: (error, tokenId) => errors.push(`${tokenId}: ${(error as Error).message}`),
    });
    recorder.used("t1", 0);
    await recorder.flush();
    expect(errors).toEqual(["t1: database down"]);
    fail = false;
    recorder.used("t1", 1000);
    await recorder.flush();
    expect(writes).toEqual([1000]);
  });

  it("forgets deleted tokens and prunes entries older than the interval", async () => {
    const writes: string[] = [];
    const recorder = new LastUsedRecorder({
      write: async (tokenId) => void writes.push(tokenId),
      onError: () => undefined,
      maxEntries: 2,
    });
    recorder.used("a", 0);
    recorder.forget("a");
    recorder.used("a", 1);
    recorder.used("b", 2);
    recorder.used("c", 70_000);
    recorder.used("b", 70_001);
    await recorder.flush();
    expect(writes).toEqual(["a", "a", "b", "c", "b"]);
  });
});
