"""Agent reviews: the prompt, the loop with a model backend, saved conversations, follow-ups."""
