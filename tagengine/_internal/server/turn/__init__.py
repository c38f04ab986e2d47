"""The chat turn: a request read (its markers, history and budget), the named steps, and how the answer is relayed
(receipts, the event stream, continue, quiet requests, pass-through, checks rolled mid-reply)."""
