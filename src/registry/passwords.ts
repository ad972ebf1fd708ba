/**
 * Password hashing for registry users (docs/registry.md): Argon2id through @node-rs/argon2, whose
 * defaults follow the OWASP recommendation (19 MiB of memory, 2 passes, 1 lane). Hashing and
 * verifying run on libuv's thread pool, off the event loop.
 */
import { randomBytes } from "node:crypto";
import type * as Argon2 from "@node-rs/argon2";
import type { Algorithm } from "@node-rs/argon2";
import { lazyLibrary } from "../platform/lazy.js";

/** The argon2 addon, loaded with the first password hashed or verified (start-up skips it). */
const argon2 = lazyLibrary<typeof Argon2>("@node-rs/argon2");

/** `Algorithm.Argon2id`; the enum is `const` and cannot be read under `isolatedModules`. */
const ARGON2ID: Algorithm = 2;

const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

/** Hashes a password; resolves to an Argon2id PHC string (`$argon2id$v=19$m=19456,t=2,p=1$...`). */
export function hashPassword(password: string): Promise<string> {
  return argon2().hash(password, OPTIONS);
}

/**
 * Whether `password` matches the PHC string `hashed`. Resolves to false (never rejects) for a
 * malformed hash, so a damaged row reads as a wrong password rather than a 500.
 */
export async function verifyPassword(hashed: string, password: string): Promise<boolean> {
  try {
    return await argon2().verify(hashed, password);
  } catch {
    return false;
  }
}

let dummy: Promise<string> | undefined;

/**
 * A hash of a random password with the same parameters as real ones. Verifying against it when a
 * user does not exist makes "unknown user" take as long as "wrong password".
 */
export function dummyPasswordHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(24).toString("base64url"));
  return dummy;
}
