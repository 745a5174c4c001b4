// Entry point: strings first (an unknown language falls back to English with a note), then
// each part of the page; records the load time for tests.
import { LANGUAGE_NAMES, loadStrings, t } from "./i18n.js";
import { initLive } from "./live.js";
import { initMyths } from "./myths.js";
import { initPlanner } from "./planner.js";
import { initRedTeam } from "./redteam.js";
import { probe } from "./state.js";
import { initWalkthrough } from "./walkthrough.js";

async function start() {
  const asked = new URLSearchParams(location.search).get("lang") || "en";
  let info;
  try {
    info = await loadStrings(asked);
  } catch (error) {
    info = await loadStrings("en");
    const note = document.getElementById("lang-note");
    note.hidden = false;
    note.textContent = t("page.lang_fallback", { lang: asked });
  }
  const picker = document.getElementById("lang");
  for (const code of info.languages) {
    const option = document.createElement("option");
    option.value = code;
    option.textContent = LANGUAGE_NAMES[code] || code;
    option.selected = code === info.lang;
    picker.append(option);
  }
  picker.addEventListener("change", () => {
    const query = new URLSearchParams(location.search);
    query.set("lang", picker.value);
    location.search = `?${query}`;
  });
  await Promise.all([initLive(), initWalkthrough(), initRedTeam(), initMyths(), initPlanner()]);
  probe.loadMs = performance.now();
  probe.ready = true;
  document.body.dataset.ready = "true";
}

start().catch((error) => {
  const box = document.getElementById("fatal");
  box.hidden = false;
  box.textContent = `Error: ${error.message}`;
});
