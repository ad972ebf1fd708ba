/**
 * A small client of the registry API over `app.inject()` for the API tests. Every response it sees
 * is checked for leaked secrets: no password, password hash or token hash may appear in a body
 *.
 */
import type { FastifyInstance } from "fastify";
import { expect } from "vitest";
import { hashToken } from "../../src/registry/tokens.js";

/** A response: status, parsed JSON body (or the raw text), headers. */
export interface Answer {
  readonly status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  readonly body: any;
  readonly headers: Record<string, string | string[] | number | undefined>;
}

/** Options of one request. */
export interface Call {
  readonly token?: string;
  /** A raw `Authorization` header, instead of `Bearer <token>`. */
  readonly authorization?: string;
  readonly body?: unknown;
  /** The client address (rate limits); default 127.0.0.1. */
  readonly address?: string;
}

/** Calls the API and remembers the secrets it must never return. */
export class RegistryClient {
  /** Passwords and token hashes handed to the server, never to be seen again in a response. */
  readonly #secrets = new Set<string>();

  constructor(readonly app: FastifyInstance) {}

  /** Notes a password or a token whose hash must never appear in a response. */
  remember(secret: { password?: string; token?: string }): void {
    if (secret.password !== undefined) this.#secrets.add(secret.password);
    if (secret.token !== undefined) this.#secrets.add(hashToken(secret.token));
  }

  async call(method: "GET" | "POST" | "DELETE", url: string, options: Call = {}): Promise<Answer> {
    const headers: Record<string, string> = {};
    if (options.authorization !== undefined) headers.authorization = options.authorization;
    else if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const body = options.body as Record<string, unknown> | undefined;
    if (typeof body?.password === "string") this.#secrets.add(body.password);
    const response = await this.app.inject({
      method,
      url,
      headers,
      remoteAddress: options.address ?? "127.0.0.1",
      ...(options.body === undefined ? {} : { payload: JSON.stringify(options.body) }),
    });
    const text = response.body;
    expect(text).not.toMatch(/argon2|password_hash|passwordHash|"hash"/);
    for (const secret of this.#secrets) expect(text).not.toContain(secret);
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: response.statusCode, body: parsed, headers: response.headers };
  }

  /** Creates a token through the API and returns it. */
  async token(user: string, password: string, name = `t-${Math.random().toString(36).slice(2, 10)}`): Promise<string> {
    const answer = await this.call("POST", "/api/v1/registry/token", { body: { name, user, password } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    const token = answer.body.token as string;
    this.remember({ token });
    return token;
  }

  /** Creates a user through the API with an admin token. */
  async user(
    adminToken: string,
    user: { name: string; password: string; role?: "admin" | "tech"; active?: boolean; description?: string },
  ): Promise<void> {
    const answer = await this.call("POST", "/api/v1/registry/user", {
      token: adminToken,
      body: { description: "", role: "tech", active: true, ...user },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  }
}
