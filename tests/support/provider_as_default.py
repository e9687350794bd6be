"""Run the CLI with the OpenAI backend's *default* base URL pointed at a fake provider.

``python -m tests.support.provider_as_default BASE_URL ARGS…`` runs ``artifactize ARGS…``
in this process after replacing the built-in ``https://api.openai.com/v1`` with
``BASE_URL``. No test endpoint variable is set, so ``verify`` may use a team review store
(a test endpoint rules the store out, on purpose): this is how the lease tests let two real
``verify`` processes talk to one real store and one fake provider.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, cast


def main(argv: list[str]) -> None:
    from artifactize.adapters.llm import backends
    from artifactize.entrypoints.cli.app import main as cli_main

    base_url, *args = argv
    settings = cast(dict[str, Any], backends.SETTINGS)
    openai = settings[backends.OPENAI_BACKEND]
    settings[backends.OPENAI_BACKEND] = dataclasses.replace(openai, default_base_url=base_url)
    cli_main(args)


if __name__ == "__main__":
    main(sys.argv[1:])
