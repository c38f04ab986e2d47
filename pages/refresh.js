// The sheet's refresh: reload the game sheet when the server has handled a newer turn or edit, unless a form on
// it is being typed into (then say so instead: what is typed is never lost).
const url = document.body.dataset.poll;
setInterval(() => fetch(url, {cache: "no-store"}).then(r => r.ok ? r.text() : document.body.dataset.version)
  .then(t => {
    if (t.trim() === document.body.dataset.version) return;
    if (!document.querySelector("form[data-dirty]")) { location.reload(); return; }
    if (document.getElementById("stale-note")) return;
    const note = document.createElement("p");
    note.id = "stale-note";
    note.className = "note stale-note";
    note.textContent = "The sheet has changed since this page was opened: save or reload to see it.";
    document.querySelector("main").prepend(note);
  }).catch(() => {}), 2000);
