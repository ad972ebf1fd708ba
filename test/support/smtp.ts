/**
 * A real SMTP server for the e-mail tests: Debian's aiosmtpd (`python3-aiosmtpd`), run as
 * `python3 -m aiosmtpd -n -l 127.0.0.1:<port>` with a handler that parses each message with
 * Python's `email` package and writes it as JSON, so that tests read what a server received.
 *
 * The handler refuses recipients named `refused@…` for good (550) and those named `busy@…` once
 * (451, then accepts them), so that tests see both kinds of SMTP refusal.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { freePort } from "./process.js";
import { temporaryDirectory } from "./temporary.js";
import { until } from "./until.js";

/** The Python of Debian, where python3-aiosmtpd installs. */
export const PYTHON = "/usr/bin/python3";

/** Why the SMTP tests cannot run here, or `undefined` when they can. */
export function smtpUnavailable(): string | undefined {
  const probe = spawnSync(PYTHON, ["-c", "import aiosmtpd"], { encoding: "utf8" });
  if (probe.error !== undefined) return `${PYTHON} cannot run (${probe.error.message})`;
  if (probe.status !== 0) return `${PYTHON} cannot import aiosmtpd (install Debian's python3-aiosmtpd)`;
  return undefined;
}

const HANDLER = `
import email, email.policy, itertools, json, os

class Recorder:
    def __init__(self, directory):
        self.directory = directory
        self.numbers = itertools.count()
        self.seen = set()

    @classmethod
    def from_cli(cls, parser, *args):
        return cls(*args)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.startswith("refused@"):
            return "550 5.1.1 <%s>: Recipient address rejected: User unknown" % address
        if address.startswith("busy@") and address not in self.seen:
            self.seen.add(address)
            return "451 4.3.2 Please try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        text = message.get_body(("plain",))
        html = message.get_body(("html",))
        # A folded header (a long Message-ID) keeps the space that began its continuation line.
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "headers": {key.lower(): str(value).strip() for key, value in message.items()},
            "content_type": message.get_content_type(),
            "text": text.get_content() if text is not None else None,
            "html": html.get_content() if html is not None else None,
        }
        number = next(self.numbers)
        partial = os.path.join(self.directory, ".%04d.tmp" % number)
        with open(partial, "w") as file:
            json.dump(record, file)
        os.rename(partial, os.path.join(self.directory, "%04d.json" % number))
        return "250 2.0.0 Ok: queued"
`;

/** A message as the server received it. */
export interface ReceivedMail {
  readonly mail_from: string;
  readonly rcpt_tos: string[];
  /** Header names in lower case (one value per name). */
  readonly headers: Record<string, string>;
  /** The top-level type: `multipart/alternative` for a text and an HTML part. */
  readonly content_type: string;
  readonly text: string | null;
  readonly html: string | null;
}

/** A running SMTP server. */
export interface SmtpServer {
  readonly port: number;
  /** `smtp://127.0.0.1:<port>`. */
  readonly url: string;
  /** The messages received so far, in order. */
  messages(): ReceivedMail[];
  /** Resolves with the messages once there are at least `count` (15 s at most). */
  received(count: number): Promise<ReceivedMail[]>;
  stop(): Promise<void>;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Starts aiosmtpd on a free port of 127.0.0.1 and waits until it accepts connections. */
export async function startSmtpServer(): Promise<SmtpServer> {
  const directory = temporaryDirectory("vigie-smtp-");
  const code = temporaryDirectory("vigie-smtp-handler-");
  writeFileSync(join(code, "vigie_recorder.py"), HANDLER);
  const port = await freePort();
  const child: ChildProcess = spawn(
    PYTHON,
    ["-m", "aiosmtpd", "-n", "-l", `127.0.0.1:${port}`, "-c", "vigie_recorder.Recorder", directory],
    { env: { ...process.env, PYTHONPATH: code }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let errors = "";
  child.stderr?.on("data", (chunk) => {
    errors += chunk;
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    await until(async () => ((await accepts(port)) ? true : undefined), "aiosmtpd to listen", 10_000);
  } catch (error) {
    child.kill();
    throw new Error(`aiosmtpd did not start: ${String(error)}\n${errors}`);
  }
  const messages = (): ReceivedMail[] =>
    readdirSync(directory)
      .filter((name) => name.endsWith(".json"))
      .sort()
      .map((name) => JSON.parse(readFileSync(join(directory, name), "utf8")));
  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messages,
    received: (count) =>
      until(
        async () => {
          const list = messages();
          return list.length >= count ? list : undefined;
        },
        `${count} messages`,
        15_000,
      ),
    async stop() {
      child.kill();
      await exited;
    },
  };
}
