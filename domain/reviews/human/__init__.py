"""Human reviews: asking a person from ``verify``, claims, submissions and settlement."""
