import { describe, expect, it } from "vitest";
import { compileConfig } from "../../src/streams/compiler.js";
import { parseEdn } from "../../src/streams/edn.js";

const compile = (text: string) => () => compileConfig(parseEdn(text));

describe("compileConfig", () => {
  it("reads :default and :persist", () => {
    expect(compileConfig(parseEdn("{:actions {:action :sdo} :default true}"))).toMatchObject({
      default: true,
      persist: false,
    });
    expect(compile("{:actions {:action :sdo} :default 1}")).toThrow(
      "invalid stream config: :default: must be true or false",
    );
  });

  it.each([
    ["{}", "invalid stream config: the configuration needs :actions"],
    ["{:actions 1}", "invalid stream config: actions: an action must be a map with :action"],
    ['{:actions {:action "sdo"}}', "invalid stream config: actions: :action must be a keyword"],
    [
      "{:actions {:action :sdo :children [{:action :fooo}]}}",
      "invalid stream config: actions.children[0]: unknown action :fooo",
    ],
    [
      "{:actions {:action :sdo :children [{:action :sdo} {:action :sdo :children [{:action :percentiles}]}]}}",
      "invalid stream config: actions.children[1].children[0]: :percentiles takes 1 param [{:duration D :percentiles [q ...] :delay L :highest-trackable-value H :nb-significant-digits 3}], got 0 params",
    ],
    ["{:actions {:action :sdo :params 3}}", "invalid stream config: actions: :params must be a vector"],
    ["{:actions {:action :sdo :children 3}}", "invalid stream config: actions: :children must be a vector or a list"],
    [
      "{:actions {:action :reinject :params [:x] :children [{:action :sdo}]}}",
      "invalid stream config: actions: :reinject is a leaf action and takes no children",
    ],
    ['{:actions {:action :scale :params ["2"]}}', "invalid stream config: actions: the factor must be a number"],
    [
      "{:actions {:action :fixed-time-window :params [{:duration 0}]}}",
      "invalid stream config: actions: :duration must be a number of seconds greater than 0",
    ],
    [
      "{:actions {:action :fixed-time-window :params [{:size 3}]}}",
      "invalid stream config: actions: unknown option :size of :fixed-time-window",
    ],
    [
      "{:actions {:action :fixed-event-window :params [{:size 1.5}]}}",
      "invalid stream config: actions: :size must be an integer of at least 1",
    ],
    [
      "{:actions {:action :throttle :params [{:count 2}]}}",
      "invalid stream config: actions: :throttle needs the option :duration",
    ],
    [
      "{:actions {:action :split :params [[[:> :metric 1]]] :children [{:action :sdo} {:action :sdo} {:action :sdo}]}}",
      "invalid stream config: actions: :split with 1 conditions needs 1 children, or one more as default",
    ],
    [
      "{:actions {:action :by :params [{:fields []}]}}",
      "invalid stream config: actions: :by needs a non-empty vector of fields",
    ],
    [
      '{:actions {:action :where :params [[:> :metric "x"]]}}',
      "invalid stream config: actions.params[0]: :> compares with a number",
    ],
    ["{:actions {:action :ewma-timeless :params [2]}}", "invalid stream config: actions: r must be between 0 and 1"],
    [
      "{:actions {:action :reaper :params [0]}}",
      "invalid stream config: actions.params[0]: D must be a number of seconds greater than 0",
    ],
    ["{:actions {:action :tap :params [1]}}", "invalid stream config: actions: :tap takes a keyword or string name"],
  ])("refuses %s", (text, message) => {
    expect(compile(text)).toThrow(message);
  });

  it("accepts every phase-1 action with valid params", () => {
    const actions = [
      "{:action :sdo}",
      "{:action :where :params [[:true]]}",
      "{:action :split :params [[[:true]]] :children [{:action :sdo}]}",
      "{:action :by :params [{:fields [:host] :gc-interval 60 :fork-ttl 120}]}",
      '{:action :with :params [{:state "ok"}]}',
      "{:action :default :params [:ttl 60]}",
      '{:action :tag :params ["a"]}',
      '{:action :untag :params [["a" "b"]]}',
      '{:action :tagged-all :params ["a"]}',
      "{:action :increment}",
      "{:action :decrement}",
      "{:action :scale :params [2]}",
      "{:action :over :params [1]}",
      "{:action :under :params [1]}",
      '{:action :changed :params [{:field :state :init "ok"}]}',
      "{:action :throttle :params [{:count 1 :duration 10}]}",
      "{:action :rename-keys :params [{:a :b}]}",
      "{:action :keep-keys :params [[:a]]}",
      "{:action :sdissoc :params [[:a]]}",
      "{:action :expired}",
      "{:action :not-expired}",
      "{:action :above-dt :params [[:> :metric 1] 10]}",
      "{:action :fixed-time-window :params [{:duration 10 :delay 2}]}",
      "{:action :fixed-event-window :params [{:size 10}]}",
      "{:action :moving-event-window :params [{:size 10}]}",
      "{:action :moving-time-window :params [{:duration 10}]}",
      "{:action :sum :params [{:duration 10}]}",
      "{:action :mean :params [{:duration 10}]}",
      "{:action :top :params [{:duration 10}]}",
      "{:action :bottom :params [{:duration 10}]}",
      "{:action :rate :params [{:duration 10}]}",
      "{:action :coll-count}",
      "{:action :coll-where :params [[:true]]}",
      "{:action :ddt}",
      "{:action :ddt-pos}",
      "{:action :ewma-timeless :params [0.5]}",
      "{:action :index :params [[:host]]}",
      "{:action :reaper :params [10 nil]}",
      "{:action :reinject :params [:other]}",
      "{:action :reinject!}",
      "{:action :info}",
      "{:action :debug}",
      "{:action :error}",
      "{:action :tap :params [:t]}",
    ];
    for (const action of actions) expect(compile(`{:actions ${action}}`), action).not.toThrow();
  });
});
