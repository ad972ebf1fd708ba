/**
 * The widget's style, injected once per page as a `<style id="vigie-style">`.
 * Everything is under the class `vigie`; text colour and font come from the page. The colours are
 * CSS custom properties a page may set on any ancestor (`:root{--vigie-accent:#b00}`), each with a
 * light and a dark default (prefers-color-scheme), both at least 4.5:1 on a white / near-black page:
 *
 * - `--vigie-accent`: links, the button, the focus ring;
 * - `--vigie-on-accent`: the button's text;
 * - `--vigie-border`: field borders and the rules between comments;
 * - `--vigie-muted`: dates;
 * - `--vigie-error`: error messages and the border of a field in error;
 * - `--vigie-field`: the background of fields (transparent: the page's);
 * - `--vigie-radius`: the corners of fields and buttons.
 */
// One literal once minified (esbuild folds the concatenation).
export const WIDGET_CSS =
  ".vigie{--a:var(--vigie-accent,#0969da);--o:var(--vigie-on-accent,#fff);--b:var(--vigie-border,#d1d9e0);" +
  "--m:var(--vigie-muted,#59636e);--e:var(--vigie-error,#cf222e);--f:var(--vigie-field,transparent);" +
  "--r:var(--vigie-radius,6px);font:inherit;color:inherit}" +
  "@media(prefers-color-scheme:dark){.vigie{--a:var(--vigie-accent,#4493f8);--o:var(--vigie-on-accent,#0d1117);" +
  "--b:var(--vigie-border,#3d444d);--m:var(--vigie-muted,#9198a1);--e:var(--vigie-error,#f85149)}}" +
  ".vigie ol{list-style:none;margin:0;padding:0}.vigie li{border-bottom:1px solid var(--b);padding:.75em 0}" +
  ".vigie p{margin:0}.vigie a{color:var(--a)}.vigie time{color:var(--m);font-size:.875em}" +
  ".vigie .v-c{white-space:pre-wrap;overflow-wrap:anywhere;margin-top:.25em}" +
  ".vigie form{display:grid;gap:.25em;margin-top:1em}.vigie label{font-weight:600;margin-top:.5em}" +
  ".vigie input[id],.vigie textarea{box-sizing:border-box;width:100%;font:inherit;color:inherit;background:var(--f);" +
  "border:1px solid var(--b);border-radius:var(--r);padding:.4em .5em}" +
  ".vigie button{font:inherit;cursor:pointer;justify-self:start;margin:.5em 0;padding:.4em 1em;" +
  "border:1px solid var(--a);border-radius:var(--r);background:var(--a);color:var(--o)}" +
  ".vigie .v-o{background:none;color:var(--a)}" +
  ".vigie :focus-visible{outline:2px solid var(--a);outline-offset:2px}" +
  ".vigie [aria-invalid=true]{border-color:var(--e)}.vigie .v-e{color:var(--e)}";
