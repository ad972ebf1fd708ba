/**
 * The moderation page's script (docs/comments.md), bundled by esbuild into
 * `dist/comments/browser/admin.js` (and its style, admin.css, into `admin.css`), loaded by the
 * page the server renders at `/comments/admin` (src/comments/admin-page.ts), which it fills: the
 * `<main id="moderation">`.
 *
 * - Sign-in (admin-signin.ts) with the comments admin token, or a registry account exchanged for a
 *   registry token valid one day; the token is kept in `sessionStorage`, never in a cookie.
 * - The moderation view (admin-moderation.ts): a "Pending" tab listing the pending comments of
 *   every website, newest first, 100 per website and "show older" (admin-pending.ts); an "Approved"
 *   tab listing the approved comments of one article (admin-approved.ts). Each comment is approved
 *   or deleted with one click, or several at once through their checkboxes (admin-table.ts).
 *   Every change reads the lists again from the API (`cache: "no-store"`).
 *
 * Comment text is decoded from its stored HTML escaping and set as `textContent`, never parsed.
 */
import "./admin.css";
import type { Page } from "./admin-controls.js";
import { parseSession, SESSION_KEY } from "./admin-logic.js";
import { showModeration } from "./admin-moderation.js";
import { showSignIn } from "./admin-signin.js";
import { h } from "./dom.js";

/** Builds the page into `main`: the moderation view of the kept session, else the sign-in form. */
function start(main: HTMLElement): void {
  // What the page did, announced: sign-in, sign-out, approvals and deletions.
  const notice = h("p", "notice");
  notice.setAttribute("role", "status");
  const view = h("div");
  main.replaceChildren(notice, view);
  const page: Page = {
    notice,
    view,
    signIn(message = "") {
      sessionStorage.removeItem(SESSION_KEY);
      notice.textContent = message;
      showSignIn(page);
    },
    signedIn(session) {
      sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
      notice.textContent =
        session.user === undefined ? "Signed in with the admin token." : `Signed in as ${session.user}.`;
      showModeration(page, session);
    },
  };
  const session = parseSession(sessionStorage.getItem(SESSION_KEY));
  if (session === undefined) page.signIn();
  else showModeration(page, session);
}

const main = document.getElementById("moderation");
if (main !== null) start(main);
