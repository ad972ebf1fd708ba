/** Runs in every test file (vitest `setupFiles`): what a test file leaves behind is removed. */
import { afterAll } from "vitest";
import { removeTemporaryDirectories } from "./temporary.js";

afterAll(() => {
  removeTemporaryDirectories();
});
