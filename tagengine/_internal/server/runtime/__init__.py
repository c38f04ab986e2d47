"""How the server runs under uvicorn: connections timed and capped, responses written in one write, the access
log, worker threads for heavy steps, the long-lived heap kept out of full collections."""
