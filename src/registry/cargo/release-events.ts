/**
 * Registry changes as stream events (docs/cargo.md, "Release announcements"): `registry.streams`
 * receives every publish, yank, unyank and owner change as one event through the platform's event
 * sink, so that a stream with an output (a chat webhook, an email) announces releases.
 */
import type { EventSink, SinkEvent } from "../../platform/events.js";

/** What happened to a crate. */
export type ReleaseAction = "publish" | "yank" | "unyank" | "owner-add" | "owner-remove";

/** One change of the registry, as the routes see it. */
export interface ReleaseChange {
  readonly action: ReleaseAction;
  /** The crate's name as first published. */
  readonly crate: string;
  /** The version published, yanked or unyanked; absent for owner changes. */
  readonly version?: string;
  /** Who did it: the user of the token. */
  readonly user: string;
  /** The users added or removed (owner changes only). */
  readonly owners?: readonly string[];
  /** Milliseconds since the Unix epoch. */
  readonly timeMs: number;
}

/** The sentence of a change: `alice published mycrate 0.2.0`, `alice added bob as an owner of mycrate`. */
export function releaseDescription(change: ReleaseChange): string {
  const { user, crate, version = "" } = change;
  const owners = (change.owners ?? []).join(", ");
  const plural = (change.owners?.length ?? 0) > 1 ? "s" : "";
  switch (change.action) {
    case "publish":
      return `${user} published ${crate} ${version}`;
    case "yank":
      return `${user} yanked ${crate} ${version}`;
    case "unyank":
      return `${user} unyanked ${crate} ${version}`;
    case "owner-add":
      return `${user} added ${owners} as owner${plural} of ${crate}`;
    case "owner-remove":
      return `${user} removed ${owners} from the owners of ${crate}`;
  }
}

/**
 * The event of a change: `{"service": "crate", "host": <crate>, "action", "version" (publish,
 * yank, unyank), "owners" (owner changes), "user", "description", "time": <Unix seconds>, "tags":
 * ["registry", <action>]}`.
 */
export function releaseEvent(change: ReleaseChange): SinkEvent {
  const event: SinkEvent = {
    service: "crate",
    host: change.crate,
    action: change.action,
    user: change.user,
    description: releaseDescription(change),
    time: change.timeMs / 1000,
    tags: ["registry", change.action],
  };
  if (change.version !== undefined) event.version = change.version;
  if (change.owners !== undefined) event.owners = [...change.owners];
  return event;
}

/** Pushes registry changes into the configured streams; never throws nor awaits. */
export class ReleasePublisher {
  constructor(
    readonly sink: EventSink,
    /** `registry.streams`. */
    readonly streams: readonly string[],
  ) {}

  /** Pushes the event of `change` into every configured stream, in the order of the list. */
  publish(change: ReleaseChange): void {
    if (this.streams.length === 0) return;
    const events = [releaseEvent(change)];
    for (const stream of this.streams) this.sink.push(stream, events);
  }
}
