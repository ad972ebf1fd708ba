/**
 * What the notifier types share (docs/notifiers.md): the `template` and `title-template` keys,
 * the reading of services' JSON answers, and cutting a text to a service's limit.
 */
import * as v from "../../validation.js";
import type { Encoded } from "../delivery.js";
import type { Event } from "../event.js";
import { DEFAULT_TEXT, DEFAULT_TITLE, template } from "./template.js";

/** Options of the notifier transports. */
export interface NotifierOptions {
  /** `http.public-url`: the `url` of templates when an event has none. */
  readonly publicUrl: string;
}

/** The template keys of every notifier type: both optional, with the defaults of template.ts. */
export const templateKeys = {
  /** The message text (mustache); a broken template is a configuration error naming the key. */
  template: v.optional(template),
  /** The one-line title (mustache). */
  "title-template": v.optional(template),
};

/** A type's two templates, defaults filled in. */
export interface Templates {
  readonly text: string;
  readonly title: string;
}

/** The templates of a definition: its own, or the defaults ({@link DEFAULT_TEXT}, {@link DEFAULT_TITLE}). */
export function templatesOf(definition: {
  readonly template?: string | undefined;
  readonly "title-template"?: string | undefined;
}): Templates {
  return { text: definition.template ?? DEFAULT_TEXT, title: definition["title-template"] ?? DEFAULT_TITLE };
}

/** The JSON object an answer's text holds, or `undefined` (not JSON, cut short, not an object). */
export function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return v.isPlainObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** A string field of an object, or `undefined`. */
export function stringField(object: Record<string, unknown> | undefined, key: string): string | undefined {
  const value = object?.[key];
  return typeof value === "string" ? value : undefined;
}

/** A positive number of seconds of an object, in milliseconds (`retry_after` of Telegram and Discord), or `undefined`. */
export function secondsField(object: Record<string, unknown> | undefined, key: string): number | undefined {
  const value = object?.[key];
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.ceil(value * 1000) : undefined;
}

/**
 * `text` cut to `max` UTF-16 code units (the unit of services' limits), ending with `…` when cut;
 * a surrogate pair is never split.
 */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

/** `text` cut to at most `max` bytes of UTF-8, ending with `…` when cut; a character is never split. */
export function truncateBytes(text: string, max: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= max) return text;
  // "…" is 3 bytes; a character cut in the middle decodes as U+FFFD, which is dropped.
  return `${bytes
    .subarray(0, max - 3)
    .toString("utf8")
    .replace(/\uFFFD+$/, "")}…`;
}

/** Whether `text` is an http(s) URL (services refuse a message whose link is anything else). */
export function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

/** The encoding of every notifier type: one unit, one message, per event (nothing rejected). */
export function onePerEvent<P>(payloadOf: (event: Event) => P): (batch: readonly Event[]) => Encoded<P> {
  return (batch) => ({ units: batch.map((event) => ({ payload: payloadOf(event), events: 1 })), rejected: 0 });
}
