/** `GET /me`, Cargo's `login_url`: a page telling how to get a token for cargo. */
import type { FastifyInstance } from "fastify";
import { escapeHtml } from "../../../platform/html.js";
import { LOGIN_PAGE } from "./api.js";

/** Registers `GET /me`. @param publicUrl `http.public-url`, without a trailing slash */
export function registerLoginPage(app: FastifyInstance, publicUrl: string): void {
  app.get("/me", { config: { openapi: LOGIN_PAGE } }, async (_request, reply) => {
    const registry = escapeHtml(`sparse+${publicUrl}/api/v1/cargo/index/`);
    return reply
      .type("text/html; charset=utf-8")
      .header("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'")
      .send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Vigie: a token for Cargo</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}pre{background:#f4f4f4;padding:.75rem;overflow-x:auto}</style></head>
<body><h1>A token for Cargo</h1>
<p>Create a token with your Vigie user name and password:</p>
<pre>curl -X POST ${escapeHtml(publicUrl)}/api/v1/registry/token \\
  -H 'content-type: application/json' \\
  -d '{"name": "cargo on my laptop", "user": "me", "password": "…"}'</pre>
<p>Then give it to Cargo (it asks for the token on its standard input):</p>
<pre>cargo login --registry vigie</pre>
<p>with this registry in <code>.cargo/config.toml</code>:</p>
<pre>[registries.vigie]
index = "${registry}"
credential-provider = "cargo:token"</pre>
</body></html>
`);
  });
}
