// The editor's script. Every form works without it; it only improves them: a form posts without a
// reload (the page's main part is replaced by the answer's), a chip appends its word, and the sheet editor shows
// as it is typed what the server re-computes for the draft (derived values, check numbers, what `hideWhen`
// hides, "Choose N", problems). Text from the server is set as text, never as markup.
"use strict";
(() => {
  const all = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const at = (root, attr, path) => root.querySelector(`[${attr}="${CSS.escape(path)}"]`);

  async function send(form, submitter) {
    const data = new FormData(form, submitter);
    const body = form.enctype === "multipart/form-data" ? data : new URLSearchParams(data);
    const r = await fetch(form.action, {method: "POST", body, credentials: "same-origin"});
    const doc = new DOMParser().parseFromString(await r.text(), "text/html");
    const main = doc.querySelector("main");
    if (!main) { location.assign(r.url); return; }
    const y = window.scrollY;
    document.querySelector("main").replaceWith(main);
    document.title = doc.title;
    if (doc.body.dataset.version) document.body.dataset.version = doc.body.dataset.version;
    if (r.redirected) history.replaceState(null, "", r.url);
    window.scrollTo(0, y);
  }

  document.addEventListener("submit", (e) => {
    const form = e.target;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-enhance")) return;
    e.preventDefault();
    send(form, e.submitter).catch(() => {  // the network or the parse failed: post it the plain way
      form.removeAttribute("data-enhance");
      form.requestSubmit(e.submitter);
    });
  });

  const withChip = (text, word) =>  // as the server's with_chip (SHEET-14)
    text.trim() ? `${text.trimEnd().replace(/[,;]+$/, "").trimEnd()}, ${word}` : word;

  document.addEventListener("click", (e) => {
    const chip = e.target.closest && e.target.closest("button.chip.pick");
    if (!chip || !chip.form) return;
    e.preventDefault();
    const input = chip.form.elements.namedItem(chip.name.slice("chip:".length));
    if (!input || !("value" in input)) return;
    input.value = withChip(input.value, chip.value);
    input.dispatchEvent(new Event("input", {bubbles: true}));
    input.focus();
  });

  function valueOf(form, path) {  // what the field a `hideWhen` reads holds now, as text (HIDE-5)
    const f = form.elements.namedItem(path);
    if (!f) return null;
    if (f instanceof RadioNodeList) {
      const box = Array.from(f).find((x) => x.type === "checkbox");
      return box ? String(box.checked) : f.value;
    }
    return f.value;
  }

  function hideAsTyped(form) {
    for (const el of all("[data-hide-path]", form)) {
      const v = valueOf(form, el.dataset.hidePath);
      if (v === null) continue;
      const values = JSON.parse(el.dataset.hideValues).map(String);
      const hit = values.includes(v);
      el.hidden = el.dataset.hideForm === "notEquals" ? !hit : hit;
    }
  }

  function show(form, d) {
    for (const [path, v] of Object.entries(d.derived)) {
      const out = at(form, "data-path", path);
      if (out) out.textContent = v || "—";
    }
    for (const [path, c] of Object.entries(d.checks)) {
      const el = at(form, "data-check", path);
      if (!el) continue;
      el.textContent = c.refused ? "— untrained: refused" : `${c.number}${c.unit ? " " + c.unit : ""}`;
      el.classList.toggle("refused", c.refused);
      el.title = c.why.join(" · ");
    }
    for (const el of all("[data-hide-path]", form)) el.hidden = el.dataset.for in d.hidden;
    for (const box of all("[data-chips]", form)) {
      const c = d.chips[box.dataset.chips];
      if (!c) continue;
      const chosen = c.chosen.map((w) => w.toLowerCase());
      const count = box.querySelector("[data-chosen]");
      if (count) count.textContent = String(c.chosen.length);
      const pick = box.querySelector("[data-pick]");
      if (pick && c.pick !== null) pick.textContent = String(c.pick);
      for (const b of all("button.chip", box)) {
        const on = chosen.includes(b.value.toLowerCase());
        b.classList.toggle("on", on);
        b.setAttribute("aria-pressed", String(on));
        b.disabled = on;
        b.hidden = !c.offer;  // SHEET-17: no more chips once N are chosen; typing is never refused
      }
    }
    for (const p of all("[data-for] .problem", form)) p.remove();
    for (const el of all("[data-for].has-problem", form)) el.classList.remove("has-problem");
    for (const p of d.problems) {
      const el = at(form, "data-for", p.path);
      if (!el) continue;
      const line = document.createElement("p");
      line.className = "problem";
      line.textContent = `${p.message} `;
      const code = document.createElement("code");
      code.textContent = p.code;
      line.append(code);
      el.append(line);
      el.classList.add("has-problem");
    }
  }

  let timer = 0;
  let asked = 0;
  async function draft(form) {
    const n = ++asked;
    const r = await fetch(form.dataset.draft, {method: "POST", body: new URLSearchParams(new FormData(form)),
                                               credentials: "same-origin"});
    if (r.ok && n === asked) show(form, await r.json());  // an older answer that came late is not shown
  }

  function edited(e) {
    const form = e.target.form;
    if (!form) return;
    form.dataset.dirty = "1";  // refresh.js does not reload over what is being typed
    if (!form.dataset.draft) return;
    hideAsTyped(form);
    clearTimeout(timer);
    timer = setTimeout(() => draft(form).catch(() => {}), 150);
  }
  document.addEventListener("input", edited);
  document.addEventListener("change", edited);
})();
