/**
 * Every visible string of the comment widget, one table per language (`data-lang`,
 * `en` by default, or `fr`). Server error sentences are shown as the server words them. Plain data
 * and functions, no browser global: the unit tests check that both tables are complete.
 */

/** The languages of `data-lang`. */
export type Lang = "en" | "fr";

/** The strings of one language. `%` in a count string stands for the number. */
export interface Strings {
  /** The heading before the count is known. */
  readonly title: string;
  /** `1 comment`, and for French also 0 (CLDR plural category `one`). */
  readonly one: string;
  /** `3 comments` (CLDR plural category `other`). */
  readonly other: string;
  readonly older: string;
  readonly name: string;
  readonly website: string;
  /** The optional address, never shown. */
  readonly email: string;
  /** The "notify me of replies" box. */
  readonly notify: string;
  readonly comment: string;
  /** The answer's label until the question is fetched (on the form's first focus). */
  readonly question: string;
  /** A math question, `%` standing for `7 + 3`. */
  readonly math: string;
  readonly send: string;
  readonly sending: string;
  readonly pending: string;
  readonly published: string;
  /** The list or the question could not be fetched (network, server down, CORS). */
  readonly offline: string;
  /** The button under each comment that moves the form under it. */
  readonly reply: string;
  /** The button that puts the form back at the end. */
  readonly cancel: string;
  /** Before the author of the comment answered, for replies deeper than the indentation. */
  readonly inReply: string;
  /** A deleted comment that has replies. */
  readonly deleted: string;
}

/** The tables, complete for every language (a test checks it). */
export const STRINGS: Readonly<Record<Lang, Strings>> = {
  en: {
    title: "Comments",
    one: "% comment",
    other: "% comments",
    older: "Show older comments",
    name: "Name",
    website: "Website (optional)",
    email: "E-mail (optional, private)",
    notify: "Notify me of replies",
    comment: "Comment",
    question: "Anti-spam question",
    math: "What is %?",
    send: "Post comment",
    sending: "Sending…",
    pending: "Thank you! Your comment is awaiting moderation.",
    published: "Thank you! Your comment is published.",
    offline: "Cannot reach the server. Try again later.",
    reply: "Reply",
    cancel: "Cancel reply",
    inReply: "in reply to",
    deleted: "Deleted comment",
  },
  fr: {
    title: "Commentaires",
    one: "% commentaire",
    other: "% commentaires",
    older: "Commentaires plus anciens",
    name: "Nom",
    website: "Site web (facultatif)",
    email: "Courriel (facultatif, masqué)",
    notify: "M’avertir des réponses",
    comment: "Commentaire",
    question: "Question anti-spam",
    math: "Combien font % ?",
    send: "Publier le commentaire",
    sending: "Envoi…",
    pending: "Merci ! Votre commentaire attend la modération.",
    published: "Merci ! Votre commentaire est publié.",
    offline: "Serveur injoignable. Réessayez plus tard.",
    reply: "Répondre",
    cancel: "Annuler la réponse",
    inReply: "en réponse à",
    deleted: "Commentaire supprimé",
  },
};

/** The language of a `data-lang` value: `fr` (or `fr-CA`…) → `fr`, anything else → `en`. */
export function langOf(value: string | undefined): Lang {
  return value?.toLowerCase().startsWith("fr") ? "fr" : "en";
}

/**
 * `3 comments`, `1 comment`, `0 commentaire` (French counts 0 as singular): the plural category of
 * CLDR (`Intl.PluralRules`) picks the string, the number is written for the language.
 */
export function countText(lang: Lang, count: number): string {
  const strings = STRINGS[lang];
  const form = new Intl.PluralRules(lang).select(count) === "one" ? strings.one : strings.other;
  return form.replace("%", count.toLocaleString(lang));
}

/**
 * The question as shown: the server's math question (`what is the result of: 7 * 3`) in the
 * widget's language with `×` for `*`, which screen readers say as "times"; any other
 * (configured) question as written.
 */
export function questionText(lang: Lang, question: string): string {
  const match = /^what is the result of: (-?\d+ [-+*] -?\d+)$/.exec(question);
  return match === null ? question : STRINGS[lang].math.replace("%", (match[1] ?? "").replace("*", "×"));
}
