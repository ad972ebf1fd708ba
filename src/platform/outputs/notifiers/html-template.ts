/**
 * The default HTML template of the notifier types that send an HTML part besides their text
 * (e-mail's HTML part, Matrix's `formatted_body`): the default text's content, as HTML. Its
 * variables are HTML-escaped when rendered.
 */

/** The default `html-template` of `email` and `matrix` outputs. */
export const DEFAULT_HTML =
  "{{#grouped}}<p><strong>{{count}} alerts</strong></p><ul>" +
  "{{#alerts}}<li><strong>{{name}}</strong> is {{state}} ({{status}}){{#message}}: {{message}}{{/message}}</li>{{/alerts}}" +
  "</ul>{{/grouped}}" +
  "{{^grouped}}<p><strong>{{name}}</strong> is {{state}} ({{status}}){{#message}}: {{message}}{{/message}}</p>{{/grouped}}" +
  '{{#url}}<p><a href="{{url}}">{{url}}</a></p>{{/url}}';
