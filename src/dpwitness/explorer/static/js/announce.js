// The page's one polite live region: one short sentence, and only when it differs from the last.
let last = "";
export function announce(sentence) {
  if (sentence === last) return;
  last = sentence;
  const box = document.getElementById("announce");
  if (box) box.textContent = sentence;
}
