"""The server's wire formats, each written and read in one module: JSON (`json_codec`), server-sent events
(`sse`) and the OpenAI chat completions API's documents (`openai`)."""
