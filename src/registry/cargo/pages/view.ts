/**
 * The content of the registry's web pages (docs/cargo.md, "Web pages") as HTML, from plain data:
 * the crate list with its search form, a crate's page, and the sign-in frame of a private registry.
 * Every text is escaped here; the only HTML taken as is is the README's, which readme.ts renders
 * inert. No Fastify, no SQL.
 */
import { escapeHtml as esc } from "../../../platform/html.js";

/** One crate of the list. */
export interface ListedCrate {
  readonly name: string;
  /** The highest version that is not yanked, or null when every version is. */
  readonly maxVersion: string | null;
  readonly description: string;
}

/** What the crate list shows. */
export interface ListPage {
  /** The search as typed (`?q=`), empty for every crate. */
  readonly query: string;
  /** From 1. */
  readonly page: number;
  readonly perPage: number;
  /** Crates matching the search, all pages. */
  readonly total: number;
  readonly crates: readonly ListedCrate[];
}

/** One dependency of the version shown. */
export interface PageDependency {
  /** The real name of the crate depended on. */
  readonly name: string;
  /** The version requirement (`^0.1`). */
  readonly req: string;
  readonly kind: "normal" | "dev" | "build";
  readonly optional: boolean;
  /** The platform it is limited to, or null. */
  readonly target: string | null;
  /** Whether it comes from crates.io rather than this registry. */
  readonly cratesIo: boolean;
}

/** One version in the list of a crate page. */
export interface PageVersion {
  readonly vers: string;
  readonly yanked: boolean;
  readonly downloads: number;
  /** Milliseconds since the epoch. */
  readonly publishedAt: number;
  readonly publishedBy: string | null;
}

/** What a crate page shows. */
export interface CratePage {
  readonly name: string;
  /** The version shown: the highest that is not yanked, else the last published. */
  readonly version: PageVersion;
  readonly description: string;
  readonly license: string | null;
  /** `http(s)` URLs only (checked at publish). */
  readonly links: readonly { readonly label: string; readonly url: string }[];
  readonly keywords: readonly string[];
  /** The README rendered by readme.ts, or null when the version has none. */
  readonly readmeHtml: string | null;
  readonly dependencies: readonly PageDependency[];
  /** Newest first. */
  readonly versions: readonly PageVersion[];
  /** Versions older than those listed, left out of the page (the browsing API lists them). */
  readonly olderVersions?: number;
  readonly owners: readonly { readonly login: string; readonly name: string }[];
  /** Downloads of every version. */
  readonly downloads: number;
  /** `http.public-url` without a trailing slash. */
  readonly publicUrl: string;
}

/** The date of a time in milliseconds, `2026-11-24` (UTC). */
function day(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** A count with thousands separated by a thin space: `12 345`. */
function count(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, "\u202f");
}

/** The URL of a crate's page. */
export function crateHref(name: string): string {
  return `/registry/${encodeURIComponent(name)}`;
}

/** The URL of a page of the list for a search. */
function listHref(query: string, page: number): string {
  const parameters = new URLSearchParams();
  if (query !== "") parameters.set("q", query);
  if (page > 1) parameters.set("page", String(page));
  const text = parameters.toString();
  return text === "" ? "/registry" : `/registry?${text}`;
}

/** The search form: a GET to the list, so it works without JavaScript. */
function searchForm(query: string): string {
  return [
    '<form class="search" method="get" action="/registry" role="search">',
    '<label class="vh" for="q">Search crates</label>',
    `<input id="q" name="q" type="search" value="${esc(query)}" placeholder="Search by name, description or keyword" maxlength="1000">`,
    '<input type="submit" value="Search"></form>',
  ].join("");
}

/** The content of `GET /registry`: the search form, the matching crates and the page links. */
export function listView(list: ListPage): string {
  const heading = list.query === "" ? "Crates" : `Crates matching “${list.query}”`;
  const items = list.crates.map((crate) => {
    const version = crate.maxVersion === null ? '<span class="yanked">yanked</span>' : esc(crate.maxVersion);
    const description = crate.description === "" ? "" : `<br><span class="muted">${esc(crate.description)}</span>`;
    return `<li><a href="${esc(crateHref(crate.name))}"><strong>${esc(crate.name)}</strong></a> ${version}${description}</li>`;
  });
  const pages = Math.max(1, Math.ceil(list.total / list.perPage));
  const nav: string[] = [];
  if (list.page > 1) nav.push(`<a href="${esc(listHref(list.query, list.page - 1))}" rel="prev">Previous page</a>`);
  if (list.page < pages) nav.push(`<a href="${esc(listHref(list.query, list.page + 1))}" rel="next">Next page</a>`);
  const shown = list.total === 1 ? "1 crate" : `${count(list.total)} crates`;
  return [
    `<h1>${esc(heading)}</h1>`,
    searchForm(list.query),
    `<p class="muted">${shown}${pages > 1 ? `, page ${list.page} of ${pages}` : ""}.</p>`,
    items.length === 0 ? "<p>No crate found.</p>" : `<ul class="crates">${items.join("")}</ul>`,
    nav.length === 0 ? "" : `<nav class="pages" aria-label="Pages">${nav.join("")}</nav>`,
  ].join("");
}

/** How to depend on the crate: `cargo add` and the registry in `.cargo/config.toml`. */
function usage(page: CratePage): string {
  const index = `sparse+${page.publicUrl}/api/v1/cargo/index/`;
  return [
    '<h2 id="use">Use it</h2>',
    `<pre><code>cargo add ${esc(page.name)} --registry vigie</code></pre>`,
    "<p>with this registry in <code>.cargo/config.toml</code>:</p>",
    `<pre><code>[registries.vigie]\nindex = "${esc(index)}"\ncredential-provider = "cargo:token"</code></pre>`,
    `<p>or in <code>Cargo.toml</code>: <code>${esc(page.name)} = { version = "${esc(page.version.vers)}", registry = "vigie" }</code></p>`,
  ].join("");
}

/** The dependencies of the version shown, with links to those of this registry. */
function dependencies(page: CratePage): string {
  if (page.dependencies.length === 0) return `<h2>Dependencies</h2><p>None.</p>`;
  const rows = page.dependencies.map((dep) => {
    const name = dep.cratesIo ? `${esc(dep.name)} <span class="muted">(crates.io)</span>` : link(dep.name);
    const notes = [dep.kind === "normal" ? "" : dep.kind, dep.optional ? "optional" : "", dep.target ?? ""]
      .filter((note) => note !== "")
      .join(", ");
    return `<tr><td>${name}</td><td><code>${esc(dep.req)}</code></td><td>${esc(notes)}</td></tr>`;
  });
  return [
    `<h2>Dependencies of ${esc(page.version.vers)}</h2>`,
    '<table><thead><tr><th scope="col">Crate</th><th scope="col">Requirement</th><th scope="col">Notes</th></tr></thead>',
    `<tbody>${rows.join("")}</tbody></table>`,
  ].join("");
}

function link(name: string): string {
  return `<a href="${esc(crateHref(name))}">${esc(name)}</a>`;
}

/** Every version, newest first, yanked ones marked. */
function versions(page: CratePage): string {
  const rows = page.versions.map((version) => {
    const yanked = version.yanked ? ' <span class="yanked">yanked</span>' : "";
    return [
      `<tr><td>${esc(version.vers)}${yanked}</td><td>${day(version.publishedAt)}</td>`,
      `<td>${esc(version.publishedBy ?? "(deleted user)")}</td><td>${count(version.downloads)}</td></tr>`,
    ].join("");
  });
  return [
    "<h2>Versions</h2>",
    '<table><thead><tr><th scope="col">Version</th><th scope="col">Published</th><th scope="col">By</th>',
    `<th scope="col">Downloads</th></tr></thead><tbody>${rows.join("")}</tbody></table>`,
    (page.olderVersions ?? 0) > 0 ? `<p class="note">And ${count(page.olderVersions ?? 0)} older versions.</p>` : "",
  ].join("");
}

/** The side column: downloads, license, links, keywords, owners. */
function facts(page: CratePage): string {
  const entries: string[] = [`<dt>Downloads</dt><dd>${count(page.downloads)}</dd>`];
  if (page.license !== null) entries.push(`<dt>License</dt><dd>${esc(page.license)}</dd>`);
  for (const { label, url } of page.links) {
    entries.push(`<dt>${esc(label)}</dt><dd><a href="${esc(url)}" rel="nofollow ugc noopener">${esc(url)}</a></dd>`);
  }
  if (page.keywords.length > 0) entries.push(`<dt>Keywords</dt><dd>${esc(page.keywords.join(", "))}</dd>`);
  const owners = page.owners.map((owner) => {
    const name = owner.name === "" ? "" : ` <span class="muted">(${esc(owner.name)})</span>`;
    return `<li>${esc(owner.login)}${name}</li>`;
  });
  entries.push(`<dt>Owners</dt><dd><ul>${owners.join("")}</ul></dd>`);
  return `<aside aria-label="About the crate"><dl>${entries.join("")}</dl></aside>`;
}

/** The content of `GET /registry/<crate>`. */
export function crateView(page: CratePage): string {
  const yanked = page.version.yanked ? ' <span class="yanked">(every version is yanked)</span>' : "";
  const readme =
    page.readmeHtml === null
      ? '<p class="muted">This version was published without a README.</p>'
      : `<div class="readme">${page.readmeHtml}</div>`;
  return [
    `<h1>${esc(page.name)} <span class="muted">${esc(page.version.vers)}</span>${yanked}</h1>`,
    page.description === "" ? "" : `<p>${esc(page.description)}</p>`,
    '<div class="cols"><div>',
    usage(page),
    '<h2 id="readme">README</h2>',
    readme,
    dependencies(page),
    versions(page),
    "</div>",
    facts(page),
    "</div>",
  ].join("");
}

/** The content of a page that is not there: a crate not found. */
export function notFoundView(message: string): string {
  return `<h1>Not found</h1><p>${esc(message)}.</p><p><a href="/registry">Every crate</a></p>`;
}

/**
 * The content of a private registry's page before sign-in: what the script replaces with the
 * sign-in form, and what a browser without JavaScript shows.
 */
export function signInView(): string {
  return [
    "<h1>Sign in</h1>",
    "<noscript><p>This registry is private: signing in needs JavaScript. Cargo and the API take a ",
    'token (see <a href="/me">how to get one</a>).</p></noscript>',
  ].join("");
}
