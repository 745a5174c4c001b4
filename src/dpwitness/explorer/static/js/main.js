// Entry point: the setting from the URL, strings next (an unknown language falls back to English
// with a note), then each part of the page; records the load time for tests.
import { LANGUAGE_NAMES, loadStrings, t, setText } from "./i18n.js";
import { initBeyond } from "./beyond.js";
import { initLive } from "./live.js";
import { initMyths } from "./myths.js";
import { initPlanner } from "./planner.js";
import { initRedTeam } from "./redteam.js";
import { onChange, probe } from "./state.js";
import { queryString, readUrl, writeUrl } from "./url.js";
import { go, initWalkthrough } from "./walkthrough.js";

async function start() {
  const asked = readUrl();
  let info;
  try {
    info = await loadStrings(asked.lang);
  } catch (error) {
    info = await loadStrings("en");
    const note = document.getElementById("lang-note");
    note.hidden = false;
    setText(note, t("page.lang_fallback", { lang: asked.lang }));
  }
  const picker = document.getElementById("lang");
  for (const code of info.languages) {
    const option = document.createElement("option");
    option.value = code;
    option.textContent = LANGUAGE_NAMES[code] || code;
    option.selected = code === info.lang;
    picker.append(option);
  }
  // A language switch reloads the page with the whole setting in the URL: nothing is lost.
  picker.addEventListener("change", () => {
    location.search = `?${queryString(picker.value)}`;
  });
  onChange(writeUrl);
  await Promise.all([initLive(), initWalkthrough(), initRedTeam(), initMyths(), initPlanner(), initBeyond()]);
  if (asked.step > 1) await go(asked.step - 1);
  probe.loadMs = performance.now();
  probe.ready = true;
  document.body.dataset.ready = "true";
}

start().catch((error) => {
  const box = document.getElementById("fatal");
  box.hidden = false;
  setText(box, t("page.fatal"));
  console.error(error);
});
