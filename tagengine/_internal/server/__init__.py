"""`tagengine serve`: the OpenAI-compatible middleware. Imported only by `serve` and `campaign` (the other
commands never pay for Starlette, uvicorn or httpx)."""
