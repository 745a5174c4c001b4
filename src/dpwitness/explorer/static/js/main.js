// Entry point: strings first, then each part of the page; records the load time for tests.
import { loadStrings } from "./i18n.js";
import { initLive } from "./live.js";
import { initMyths } from "./myths.js";
import { initRedTeam } from "./redteam.js";
import { probe } from "./state.js";
import { initWalkthrough } from "./walkthrough.js";

async function start() {
  const lang = new URLSearchParams(location.search).get("lang") || "en";
  const info = await loadStrings(lang);
  const picker = document.getElementById("lang");
  for (const code of info.languages) {
    const option = document.createElement("option");
    option.value = option.textContent = code;
    option.selected = code === info.lang;
    picker.append(option);
  }
  picker.addEventListener("change", () => { location.search = `?lang=${picker.value}`; });
  await Promise.all([initLive(), initWalkthrough(), initRedTeam(), initMyths()]);
  probe.loadMs = performance.now();
  probe.ready = true;
  document.body.dataset.ready = "true";
}

start().catch((error) => {
  const box = document.getElementById("fatal");
  box.hidden = false;
  box.textContent = `Error: ${error.message}`;
});
