"""The team review store: the HTTP client, its configuration and URLs, and the server's database."""
