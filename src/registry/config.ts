/**
 * The `registry` section of the configuration besides `enabled`: the Cargo registry's keys
 * (docs/cargo.md, cargo/config.ts) and `sign-in`, the rate limit of failed token creations
 * (sign-in-limit.ts).
 */
import { cargoSection } from "./cargo/config.js";
import { signInSection } from "./sign-in-limit.js";

/** The keys of the `registry` section besides `enabled`. */
export const registryShape = { cargo: cargoSection, "sign-in": signInSection };
