import { describe, expect, it } from "vitest";
import { groupEvent, notificationEvent } from "../../../../src/platform/outputs/notifier.js";
import {
  DEFAULT_TEXT,
  DEFAULT_TITLE,
  HTML_ESCAPE,
  JSON_ESCAPE,
  NO_ESCAPE,
  render,
  template,
  templateView,
} from "../../../../src/platform/outputs/notifiers/template.js";
import { ValidationError } from "../../../../src/platform/validation.js";

const base = {
  state: "critical" as const,
  status: "triggered" as const,
  message: "HTTP 503",
  since: "2026-11-26T10:00:00.000Z",
  duration: 0,
  url: "http://vigie.example/status",
  labels: { team: "web" },
};

describe("templates", () => {
  it("render the documented variables of one notification", () => {
    const event = notificationEvent({ ...base, name: "shop", key: "shop/chat" }, 0);
    const view = templateView(event, "http://fallback");
    expect(
      render(
        "{{name}}|{{state}}|{{status}}|{{message}}|{{since}}|{{duration}}|{{url}}|{{labels.team}}",
        view,
        NO_ESCAPE,
      ),
    ).toBe("shop|critical|triggered|HTTP 503|2026-11-26T10:00:00.000Z|0|http://vigie.example/status|web");
    expect(render(DEFAULT_TITLE, view, NO_ESCAPE)).toBe("shop is critical (triggered)");
    expect(render(DEFAULT_TEXT, view, NO_ESCAPE)).toBe(
      "shop is critical (triggered): HTTP 503\nhttp://vigie.example/status",
    );
  });

  it("render a group with count and alerts", () => {
    const events = ["a", "b", "c"].map((name) => notificationEvent({ ...base, name, key: `${name}/chat` }, 0));
    const view = templateView(groupEvent(events, 0), "http://vigie.example/");
    expect(view.grouped).toBe(true);
    expect(render("{{count}}:{{#alerts}} {{name}}{{/alerts}}", view, NO_ESCAPE)).toBe("3: a b c");
    expect(render(DEFAULT_TITLE, view, NO_ESCAPE)).toBe("3 alerts: a triggered; b triggered; c triggered; ");
  });

  it("render a stream event with its service, state, description and time", () => {
    const view = templateView(
      { host: "web1", service: "disk", state: "ok", description: "82%", time: 1_800_000_000 },
      "http://v/",
    );
    expect(view).toMatchObject({ name: "disk", state: "ok", status: "resolved", message: "82%", url: "http://v/" });
    expect(view.since).toBe("2027-01-15T08:00:00.000Z");
  });

  it("escape for their destination", () => {
    const view = templateView({ service: '<b>"x" & y</b>' }, "");
    expect(render("{{name}}", view, HTML_ESCAPE)).toBe("&lt;b&gt;&quot;x&quot; &amp; y&lt;/b&gt;");
    expect(JSON.parse(`"${render("{{name}}", view, JSON_ESCAPE)}"`)).toBe('<b>"x" & y</b>');
  });

  it("are refused when they do not parse, naming the key", () => {
    expect(() => template("{{#alerts}}never closed", "outputs.chat.template")).toThrow(ValidationError);
    expect(() => template("{{#alerts}}never closed", "outputs.chat.template")).toThrow(/outputs\.chat\.template/);
    expect(template("{{name}}", "k")).toBe("{{name}}");
  });
});
