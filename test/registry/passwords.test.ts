import { describe, expect, it } from "vitest";
import { dummyPasswordHash, hashPassword, verifyPassword } from "../../src/registry/passwords.js";

describe("passwords", () => {
  it("hashes with Argon2id and a random salt, and verifies", async () => {
    const hashed = await hashPassword("correct horse battery");
    expect(hashed).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(hashed).not.toContain("correct horse battery");
    expect(await hashPassword("correct horse battery")).not.toBe(hashed);
    expect(await verifyPassword(hashed, "correct horse battery")).toBe(true);
    expect(await verifyPassword(hashed, "correct horse batter")).toBe(false);
  });

  it("reads a malformed hash as a wrong password", async () => {
    expect(await verifyPassword("not a hash", "whatever")).toBe(false);
  });

  it("keeps one dummy hash with the parameters of real ones", async () => {
    const dummy = await dummyPasswordHash();
    expect(dummy).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await dummyPasswordHash()).toBe(dummy);
  });
});
