"""Model backends: OpenAI Responses, Anthropic Messages, and the shared HTTP, retry and usage rules."""
