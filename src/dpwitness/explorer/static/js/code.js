// The exact dpwitness call behind a panel's numbers (written by the server from the parameters it
// used), shown in a <pre> with a copy button inside the container `id`.
import { t } from "./i18n.js";

export function showCall(id, source) {
  const box = document.getElementById(id);
  if (!box) return;
  if (!box.firstChild) {
    const note = document.createElement("p");
    note.className = "muted small";
    note.textContent = t("common.call");
    const pre = document.createElement("pre");
    pre.tabIndex = 0;
    pre.append(document.createElement("code"));
    const copy = document.createElement("button");
    copy.type = "button";
    copy.className = "copy";
    copy.textContent = t("common.copy");
    copy.addEventListener("click", async () => {
      try { await navigator.clipboard.writeText(box.querySelector("code").textContent); copy.textContent = t("common.copied"); } catch { copy.textContent = t("common.copy_failed"); }
    });
    box.append(note, pre, copy);
  }
  box.querySelector("code").textContent = source;
  box.hidden = !source;
}
