// Every answer from the server belongs to the setting it was asked for, and is drawn only if that
// setting still holds when it arrives, however late it is. Each part of the page that asks the
// server something is a Panel: it numbers its questions (a generation) and knows what its
// question is built from (its key: the inputs, as a string). An answer is applied only if
//   - no newer question of the same panel has been asked (the newer one also aborts the request),
//   - the panel's key is what it was when the question was asked (no input it depends on moved),
//   - the live setting has not been refused since (a refusal drops every question that depends on
//     it, aborts their requests, and each panel clears what it drew from the refused setting).
// A panel asked by a button (no new question follows by itself) says "not computed" when its answer
// is dropped because an input moved (its `moved`); the others ask again for the new setting.
// A moved input drops the answer but lets its request finish: the live panel asks one question at
// a time while a slider is dragged, and aborting on every step would send one request per step.
import { apiUrl, getJSON } from "./api.js";
import { probe, state } from "./state.js";

const panels = [];

export class Panel {
  // key(): the inputs the panel's question is built from. follows(): does the question depend on
  // the live setting (ε, Δ, f(D), …)? refused(): clears what the panel drew from a refused setting.
  // moved(): what to show when an answer is dropped because an input it was asked for moved.
  // views(): the elements that show the panel's answer; between a change of the setting and the
  // answer for it they are marked pending (dimmed, aria-busy), so that no number, picture or call on
  // screen passes for the new setting while it still shows the previous one.
  constructor({ key, follows = () => true, refused = () => {}, moved = () => {}, views = () => [] }) {
    this.key = key;
    this.follows = follows;
    this.refused = refused;
    this.moved = moved;
    this.views = views;
    this.shownKey = null;
    this.generation = 0;
    this.turn = null;
    panels.push(this);
  }

  // The panel has drawn its answer for the current setting: its views are no longer pending.
  shown() {
    this.shownKey = this.key();
    setPending(this.views(), false);
  }

  // A new question: the previous one's answer will be dropped (and its request aborted).
  begin() {
    this.drop();
    this.turn = new Turn(this);
    return this.turn;
  }

  drop() {
    this.generation += 1;
    if (this.turn) this.turn.controller.abort();
    this.turn = null;
  }
}

class Turn {
  constructor(panel) {
    this.panel = panel;
    this.generation = panel.generation;
    this.key = panel.key();
    this.controller = new AbortController();
  }

  // Does this question still belong to what the page shows?
  get current() {
    const p = this.panel;
    return this.generation === p.generation && this.key === p.key(); // a refusal bumps the generation
  }

  // The server's answer, or null if it arrives for a setting that has moved on or been refused.
  // A refusal by the server is thrown only while it still speaks for the current setting.
  async get(path, params) {
    this.key = this.panel.key(); // what the question is built from, now that it is asked
    try {
      const data = await getJSON(path, params, this.controller.signal);
      if (this.current) return data;
    } catch (error) {
      if (this.current) throw error;
    }
    probe.dropped.push(apiUrl(path, params)); // for tests: which answers were dropped (the last 200)
    if (probe.dropped.length > 200) probe.dropped.shift();
    if (this.generation === this.panel.generation) this.panel.moved(); // not replaced by a newer question
    return null;
  }
}

function setPending(nodes, pending) {
  for (const node of nodes) {
    if (!node) continue;
    node.classList.toggle("pending", pending);
    if (pending) node.setAttribute("aria-busy", "true");
    else node.removeAttribute("aria-busy");
  }
}

// The live setting has changed: every view that shows an answer for another setting is marked pending
// at once (in the same task as the change, before any request), until its panel draws the new answer.
export function markPending() {
  for (const panel of panels) if (panel.follows() && panel.key() !== panel.shownKey) setPending(panel.views(), true);
}

// The live setting was refused (in the page or by the server): nothing asked for it may be drawn.
export function refuseAll() {
  for (const panel of panels) {
    if (!panel.follows()) continue;
    panel.drop();
    panel.refused();
    setPending(panel.views(), false); // "not computed" is what is true for the refused setting
  }
}

// Every part of the live setting, as one key (the state's own fields and d).
export const settingKey = () => JSON.stringify(state);
