"""The SQLite state store: schema, connection, rows, history and Human request tables."""
