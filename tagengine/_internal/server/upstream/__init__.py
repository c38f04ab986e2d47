"""The model behind the server: the client every answer is read through, its transport, the kinds of upstream
(`kinds.KINDS`: an OpenAI-compatible server over HTTP, the demo game in this process) and token counts from it."""
