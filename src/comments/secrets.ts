/**
 * The comments admin token and challenge secret: the configured value (file or
 * environment) when there is one; otherwise a value generated at the first start (32 random bytes,
 * base64url), stored in the database and reused by every later start and every instance sharing
 * the database. A generated admin token is also written to `<data directory>/comments-admin-token`
 * (mode 0600) so the operator can read it; the log gives the path, never the token. The key of the
 * e-mail links is always generated and kept in the database, shared by every instance.
 */
import { randomBytes } from "node:crypto";
import { chmod, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { FastifyBaseLogger } from "fastify";
import type { Database } from "../platform/database.js";
import { makePrivateDirectory } from "../platform/private-files.js";
import { getOrCreateSetting } from "../platform/settings.js";

/** The setting keys of the generated values (platform `settings` table). */
export const ADMIN_TOKEN_SETTING = "comments.admin-token";
export const CHALLENGE_SECRET_SETTING = "comments.challenge-secret";
/** The key that signs the links of comment e-mail: always generated, never configured. */
export const MAIL_KEY_SETTING = "comments.mail-key";

/** The name of the file holding a generated admin token, in the data directory. */
export const ADMIN_TOKEN_FILE = "comments-admin-token";

/** The secrets the comments module runs with. */
export interface CommentSecrets {
  readonly adminToken: string;
  readonly challengeSecret: string;
  /** Signs the approve, delete and unsubscribe links of e-mail (mail-links.ts). */
  readonly mailKey: string;
}

/** 32 random bytes, base64url (43 characters). */
export function generateSecret(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * Writes the admin token to `file` readable by its owner only. The mode of an existing file is
 * tightened before the token is written into it.
 */
async function writeTokenFile(file: string, token: string): Promise<void> {
  try {
    await chmod(file, 0o600);
  } catch (error) {
    if (!(error instanceof Error && "code" in error && error.code === "ENOENT")) throw error;
  }
  await writeFile(file, token, { mode: 0o600 });
  await chmod(file, 0o600);
}

/**
 * Resolves the admin token and challenge secret.
 *
 * @param configured the values of `admin-token` and `challenge.secret`, if given
 * @throws Error when the database cannot be read or written. A token file that cannot be written
 *   is logged at `error` and does not stop the start (the token stays in the `settings` table).
 */
export async function resolveSecrets(
  database: Database,
  configured: { adminToken: string | undefined; challengeSecret: string | undefined },
  logger: FastifyBaseLogger,
): Promise<CommentSecrets> {
  const challengeSecret =
    configured.challengeSecret ?? (await getOrCreateSetting(database, CHALLENGE_SECRET_SETTING, generateSecret)).value;
  const mailKey = (await getOrCreateSetting(database, MAIL_KEY_SETTING, generateSecret)).value;
  if (configured.adminToken !== undefined) return { adminToken: configured.adminToken, challengeSecret, mailKey };

  const setting = await getOrCreateSetting(database, ADMIN_TOKEN_SETTING, generateSecret);
  const file = join(database.dataDirectory, ADMIN_TOKEN_FILE);
  try {
    await makePrivateDirectory(database.dataDirectory);
    await writeTokenFile(file, setting.value);
    logger.info(
      { file, generated: setting.created },
      `comments admin token ${setting.created ? "generated and " : ""}written to ${file}`,
    );
  } catch (error) {
    logger.error(
      { err: error, file },
      `cannot write the comments admin token to ${file}; it is the setting ${ADMIN_TOKEN_SETTING} in the database`,
    );
  }
  return { adminToken: setting.value, challengeSecret, mailKey };
}
