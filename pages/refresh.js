// The one script of the pages: reload the game sheet when the server has handled a newer turn.
const v = document.body.dataset.version, url = document.body.dataset.poll;
setInterval(() => fetch(url, {cache: "no-store"}).then(r => r.ok ? r.text() : v)
  .then(t => { if (t.trim() !== v) location.reload(); }).catch(() => {}), 2000);
