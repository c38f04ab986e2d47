"""Open WebUI's side of tagengine (docs/open-webui.md): the sheet Function it runs, installed through its API."""
