/**
 * The `registry` section of the configuration besides `enabled`: the Cargo registry's keys
 * (docs/cargo.md, cargo/config.ts), `sign-in`, the rate limit of failed token creations
 * (sign-in-limit.ts), and `streams`, where the Cargo registry's changes go as events.
 */
import { array, string, type Validator, withDefault } from "../platform/validation.js";
import { cargoSection } from "./cargo/config.js";
import { signInSection } from "./sign-in-limit.js";

/** A stream name of `registry.streams` (the stream-name rule of docs/streams.md). */
const streamName: Validator<string> = string({
  pattern: /^[A-Za-z0-9._-]{1,128}$/,
  patternRule: "must be a stream name: 1 to 128 characters of A-Z a-z 0-9 . _ -",
});

/** The keys of the `registry` section besides `enabled`. */
export const registryShape = {
  cargo: cargoSection,
  "sign-in": signInSection,
  /** Streams that receive every publish, yank, unyank and owner change of the Cargo registry. */
  streams: withDefault<string[]>(array(streamName), []),
};
