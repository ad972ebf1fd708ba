/**
 * Temporary directories of tests, removed after each test file (test/support/cleanup.ts runs
 * {@link removeTemporaryDirectories} from `afterAll`), so that test runs leave nothing in the
 * system's temporary directory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const created: string[] = [];

/** A new, empty directory under the system's temporary directory, named `<prefix><random>`. */
export function temporaryDirectory(prefix = "vigie-test-"): string {
  const directory = mkdtempSync(join(tmpdir(), prefix));
  created.push(directory);
  return directory;
}

/** Removes every directory {@link temporaryDirectory} made so far in this test file. */
export function removeTemporaryDirectories(): void {
  for (const directory of created.splice(0)) rmSync(directory, { recursive: true, force: true });
}
