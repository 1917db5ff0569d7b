"""Pure output shapes: a transcript as OpenAI chat messages, Markdown or JSON exports,
and the JSON an SSE event carries for a buffered line."""
