"""The team review store, client side: records, read/write-through, push, and what a server admits."""
