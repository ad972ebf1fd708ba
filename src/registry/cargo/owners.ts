/** The body of `cargo owner --add` and `--remove` (docs/cargo.md): the user names to add or remove. */
import { childPath, described, isPlainObject, ValidationError, type Validator } from "../../platform/validation.js";

/** The most user names one owners request may hold. */
const MAX_OWNERS = 100;

/** The rule of an owners body, with the shape to send. */
const OWNERS_RULE = `must be a list of 1 to ${MAX_OWNERS} user names: {"users": ["name"]}`;

/**
 * `{"users": ["a", "b"]}`: 1 to 100 user names, duplicates removed; unknown keys are ignored.
 * @throws ValidationError `users: must be a list of 1 to 100 user names: …`
 */
export const ownersBody: Validator<{ users: string[] }> = described(
  (value, path) => {
    const users = isPlainObject(value) ? value.users : undefined;
    if (
      !Array.isArray(users) ||
      users.length === 0 ||
      users.length > MAX_OWNERS ||
      !users.every((user): user is string => typeof user === "string" && user.length > 0 && user.length <= 64)
    ) {
      throw new ValidationError(childPath(path, "users"), OWNERS_RULE);
    }
    return { users: [...new Set(users)] };
  },
  {
    type: "object",
    properties: {
      users: {
        type: "array",
        minItems: 1,
        maxItems: MAX_OWNERS,
        items: { type: "string", minLength: 1, maxLength: 64 },
      },
    },
    required: ["users"],
  },
);
