"""Human tools: ``launch`` and ``output``, their registry, results and live lines."""
