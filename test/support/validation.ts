/** Catching the ValidationError a validator throws, for tests of field rules. */
import { ValidationError } from "../../src/platform/validation.js";

/**
 * Runs `run` and returns the ValidationError it throws.
 * @throws Error when `run` returns, or throws anything else
 */
export function validationError(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("expected a ValidationError");
}
