// The myths, each cut or kept with its reason; the numbers come from /api/myths.
import { getJSON } from "./api.js";
import { setText, t } from "./i18n.js";

export async function initMyths() {
  const data = await getJSON("myths", { epsilon: 1 });
  const u = data.uncalibrated;
  const myths = [
    { claim: "myth1.claim", reason: t("myth1.reason"), kept: false },
    { claim: "myth2.claim", reason: t("myth2.reason", { b: u.scale, delta: u.sensitivity, eps: u.real_epsilon }), kept: false },
    { claim: "myth3.claim", reason: t("myth3.reason"), kept: true, factors: data.factors },
  ];
  const list = document.getElementById("myth-list");
  list.replaceChildren();
  for (const myth of myths) {
    const card = document.createElement("article");
    card.className = "card";
    const title = document.createElement("h3");
    const verdict = document.createElement("span");
    verdict.className = `verdict${myth.kept ? " kept" : ""}`;
    setText(verdict, t(myth.kept ? "myth.verdict_kept_corrected" : "myth.verdict_cut"));
    verdict.dataset.verdict = myth.kept ? "kept" : "cut";
    title.append(verdict, document.createTextNode(t(myth.claim)));
    const reason = document.createElement("p");
    setText(reason, myth.reason);
    card.append(title, reason);
    if (myth.factors) {
      const ul = document.createElement("ul");
      for (const f of myth.factors) {
        const li = document.createElement("li");
        setText(li, t("myth3.factor", { eps: f.epsilon, factor: f.factor }));
        ul.append(li);
      }
      card.append(ul);
    }
    list.append(card);
  }
}
