"""The viewers' reads (domain/reviews/human/viewing.py) on a real repository through the real
pinned filesystem: each bound at its limit and one past it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from artifactize.domain.reviews.human.errors import HumanReviewError
from artifactize.domain.reviews.human.viewing import (
    FILE_TOO_LARGE,
    VIEW_DEPTH_MAX,
    VIEW_FILE_MAX_BYTES,
    VIEW_FILES_MAX,
    ScopeListing,
    ScopeViewer,
)
from artifactize.entrypoints.container import Container
from artifactize.ports.ids import RequestId
from artifactize.ports.state import RequestRecord
from tests.support.web_server import World

FILES_AT_START = 6  # index.artf, notes.txt, guide.md, diagram.svg, page.html, pixel.png


@pytest.fixture(scope="module")
def waiting(tmp_path_factory: pytest.TempPathFactory) -> tuple[World, RequestRecord]:
    world = World(tmp_path_factory.mktemp("viewing"))
    _, request_id = world.waiting()
    store = Container().state_stores().open(str(world.state), create=False)
    assert store is not None
    record = store.get_request(RequestId(request_id))
    assert record is not None
    return world, record


def viewer() -> ScopeViewer:
    container = Container()
    return ScopeViewer(
        container.config_service().load,
        container.filesystem(),
        container.regex(),
        container.worker_threads(),
    )


def listing(record: RequestRecord) -> ScopeListing:
    return anyio.run(viewer().listing, record)


def test_a_listing_shows_at_most_view_files_max_files(
    waiting: tuple[World, RequestRecord],
) -> None:
    world, record = waiting
    many = world.repo / "doc" / "many"
    many.mkdir()
    for index in range(VIEW_FILES_MAX - FILES_AT_START):
        (many / f"{index:05}.txt").write_text("x", encoding="utf-8")
    at_limit = listing(record)
    assert len(at_limit.files) == VIEW_FILES_MAX and not at_limit.truncated
    (many / "one-more.txt").write_text("x", encoding="utf-8")
    past = listing(record)
    assert len(past.files) == VIEW_FILES_MAX and past.truncated
    for path in many.iterdir():
        path.unlink()
    many.rmdir()


def test_a_listing_descends_view_depth_max_folders(waiting: tuple[World, RequestRecord]) -> None:
    world, record = waiting
    folder = world.repo / "doc"
    names = []
    for _ in range(VIEW_DEPTH_MAX):
        names.append("d")
        folder = folder / "d"
    folder.mkdir(parents=True)
    (folder / "deep.txt").write_text("x", encoding="utf-8")
    at_limit = listing(record)
    assert "/".join([*names, "deep.txt"]) in at_limit.files and not at_limit.truncated
    (folder / "d").mkdir()
    (folder / "d" / "deeper.txt").write_text("x", encoding="utf-8")
    past = listing(record)
    assert not any(path.endswith("deeper.txt") for path in past.files) and past.truncated


def test_a_viewer_reads_at_most_view_file_max_bytes(waiting: tuple[World, RequestRecord]) -> None:
    world, record = waiting
    big = world.repo / "doc" / "big.txt"
    big.write_bytes(b"x" * VIEW_FILE_MAX_BYTES)
    assert len(anyio.run(viewer().read, record, "big.txt")) == VIEW_FILE_MAX_BYTES
    big.write_bytes(b"x" * (VIEW_FILE_MAX_BYTES + 1))
    with pytest.raises(HumanReviewError) as refused:
        anyio.run(viewer().read, record, "big.txt")
    assert refused.value.message == FILE_TOO_LARGE
    big.unlink()


def test_a_changed_declaration_refuses_every_viewer(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    _, request_id = world.waiting()
    store = Container().state_stores().open(str(world.state), create=False)
    assert store is not None
    record = store.get_request(RequestId(request_id))
    assert record is not None
    index = world.repo / "doc" / "index.artf"
    index.write_text(index.read_text(encoding="utf-8").replace("Signed off", "Changed"))
    with pytest.raises(HumanReviewError) as refused:
        anyio.run(viewer().read, record, "notes.txt")
    assert "changed" in refused.value.message.lower()
