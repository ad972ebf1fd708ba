/**
 * The first admin (docs/registry.md). For containers: when `VIGIE_ADMIN_NAME` and
 * `VIGIE_ADMIN_PASSWORD` are set and no user of that name exists, the server creates it as an
 * active admin at start-up. An existing user of that name is left as it is (its password is not
 * reset), so the variables can stay set across restarts.
 */
import { ConfigError } from "../platform/config.js";
import { ValidationError } from "../platform/validation.js";
import { hashPassword } from "./passwords.js";
import type { UserStore } from "./storage.js";
import { type User, userName, userPassword } from "./users.js";

/** The admin to create at start-up. */
export interface BootstrapAdmin {
  readonly name: string;
  readonly password: string;
}

/**
 * Reads `VIGIE_ADMIN_NAME` and `VIGIE_ADMIN_PASSWORD` (both or neither; empty counts as unset).
 *
 * @returns the admin to create, or `undefined` when neither variable is set
 * @throws ConfigError when only one is set or a value breaks the rules of a user name or password (the
 *   password is never shown)
 */
export function bootstrapAdminFrom(
  environment: Readonly<Record<string, string | undefined>>,
): BootstrapAdmin | undefined {
  const name = environment.VIGIE_ADMIN_NAME || undefined;
  const password = environment.VIGIE_ADMIN_PASSWORD || undefined;
  if (name === undefined && password === undefined) return undefined;
  if (name === undefined || password === undefined) {
    throw new ConfigError("invalid configuration: VIGIE_ADMIN_NAME and VIGIE_ADMIN_PASSWORD must be set together");
  }
  try {
    userName(name, "VIGIE_ADMIN_NAME");
  } catch (error) {
    if (error instanceof ValidationError)
      throw new ConfigError(`invalid configuration: ${error.message} (got ${JSON.stringify(name)})`);
    throw error;
  }
  try {
    userPassword(password, "VIGIE_ADMIN_PASSWORD");
  } catch (error) {
    if (error instanceof ValidationError) throw new ConfigError(`invalid configuration: ${error.message}`);
    throw error;
  }
  return { name, password };
}

/**
 * Creates the admin unless a user of that name exists. Safe when several instances start at once
 * on one database: the unique name decides, the others create nothing.
 *
 * @param now milliseconds since the epoch
 * @returns the created user, or `undefined` when the name was taken
 */
export async function createBootstrapAdmin(
  users: UserStore,
  admin: BootstrapAdmin,
  now: number,
): Promise<User | undefined> {
  // Checked first so that a restart does not spend an Argon2 hash on a user that exists.
  if ((await users.find(admin.name)) !== undefined) return undefined;
  const passwordHash = await hashPassword(admin.password);
  return users.createIfAbsent(
    {
      name: admin.name,
      description: "created at start-up from VIGIE_ADMIN_NAME",
      role: "admin",
      active: true,
      passwordHash,
    },
    now,
  );
}
