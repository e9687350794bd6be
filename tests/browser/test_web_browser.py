"""``artifactize web`` in a real browser: Playwright for Python driving Debian's Chromium.

A person who never used the terminal reviewer signs off the review a ``verify --wait`` is
waiting for: opens the printed URL, finds the request in the inbox, claims it, runs an
output tool (its lines arrive while it runs) and a launch tool, opens each viewer, submits
an invalid then a valid verdict, and sees the Run settle live in the monitor; the
``verify --wait`` ends GREEN. A second flow settles the request elsewhere while its page is
open. Everything is found by role and accessible name, as a screen reader would. The
screenshots in docs/web.md are written here (docs/web/*.png).

Playwright's own browser download is not reachable: the system Chromium is launched
(``make test-web`` installs it with .ci/ensure-chromium; without it these tests skip).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import no_process_left_behind as no_process_left_behind_in
from tests.support.web_server import STOPPED, WebServer, World, environment

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "web"
WAIT_MS = 20_000
VERIFY_SECONDS = 120
VIEWPORT = {"width": 1100, "height": 900}

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="no Chromium (bash .ci/ensure-chromium installs it)"
)


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=5):
        yield


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def shot(page: Any, name: str, *, full_page: bool = True) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full_page)


def signed_in(browser: Any, web: WebServer) -> Any:
    """A new page of ``browser`` that opened the printed URL (the inbox)."""
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(WAIT_MS)
    page.goto(web.url)
    return page


def verify_wait(world: World) -> subprocess.Popen[str]:
    """``verify --all --wait``: stays until the Human review is submitted."""
    return subprocess.Popen(
        world.argv("verify", "--all", "--wait", "--timeout-ms", str(VERIFY_SECONDS * 1000)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(world.state),
    )


def waiting_request(world: World) -> str:
    """The request ID once ``verify --wait`` left it waiting (read from the state)."""
    import time

    deadline = time.monotonic() + VERIFY_SECONDS
    while time.monotonic() < deadline:
        code, listed = world.cli("request", "list")
        if code == 0 and listed:
            rows = listed if isinstance(listed, list) else listed.get("requests", [])
            if rows:
                return str(rows[0]["id"])
        time.sleep(0.2)
    raise AssertionError("no request ever waited")


def test_a_person_signs_off_in_the_browser_and_verify_wait_ends_green(
    world: World, browser: Any
) -> None:
    from playwright.sync_api import expect

    verify = verify_wait(world)
    web: WebServer | None = None
    try:
        request_id = waiting_request(world)
        web = WebServer(world)
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(web.url)

        # The inbox: one waiting request, linked by its eval ID.
        expect(page).to_have_title(re.compile(r"^\(1\) Inbox"))
        shot(page, "inbox")
        page.get_by_role("link", name="doc/signoff").click()
        expect(page.get_by_role("heading", name="doc/signoff", level=1)).to_be_visible()
        expect(page.get_by_role("button", name="show_doc")).to_be_disabled()

        # Claim, then run the output tool: its lines arrive while it still runs.
        page.get_by_role("button", name="Claim", exact=True).click()
        expect(page.get_by_text("Claimed by alice (you)")).to_be_visible()
        log = page.get_by_role("log", name="Tool log")
        page.get_by_role("button", name="show_doc").click()
        expect(log).to_contain_text("The answer is 42.")
        expect(log).to_contain_text("· show · doc")
        expect(log).not_to_contain_text("■")  # still running: the gate is closed
        expect(log.locator('[data-stream="stderr"]')).to_have_text("a warning")
        world.gate.touch()
        expect(log).to_contain_text("■ exit 0")

        # A launch tool: its output drains into the log as well.
        page.get_by_role("button", name="serve_doc").click()
        expect(log).to_contain_text("· serve · doc")
        expect(log).to_contain_text("preview on")
        shot(page, "request")

        # Each viewer, from the scope's file links.
        page.get_by_role("link", name="notes.txt", exact=True).click()
        table = page.get_by_role("table", name="Text with line numbers")
        expect(table).to_contain_text("Second line.")
        expect(table.locator("td.ln").nth(1)).to_have_text("2")
        page.go_back()
        page.get_by_role("link", name="guide.md", exact=True).click()
        expect(page.get_by_role("heading", name="Notes", level=1)).to_be_visible()
        expect(page.locator(".markdown strong")).to_have_text("42")
        expect(page.get_by_text("<script>window.pwned = 1</script>")).to_be_visible()
        shot(page, "viewer-markdown")
        expect(page.get_by_role("link", name="click")).to_have_count(0)  # javascript: refused
        assert page.evaluate("typeof window.pwned") == "undefined"
        page.go_back()
        page.get_by_role("link", name="diagram.svg", exact=True).click()
        image = page.get_by_role("img", name="diagram.svg")
        expect(image).to_be_visible()
        page.wait_for_function("document.querySelector('img.image').naturalWidth === 40")
        assert page.evaluate("typeof window.pwned") == "undefined"
        page.go_back()
        page.get_by_role("link", name="pixel.png", exact=True).click()
        expect(page.get_by_role("img", name="pixel.png")).to_be_visible()
        page.wait_for_function("document.querySelector('img.image').naturalWidth === 1")
        page.go_back()

        # Watch the Run in a second window while submitting.
        monitor = context.new_page()
        monitor.set_default_timeout(WAIT_MS)
        monitor.goto(web.base + "/")
        monitor.get_by_role("link", name="Monitor").click()
        run_id = request_id.rsplit("-", 1)[0]
        monitor.get_by_role("link", name=run_id).click()
        expect(monitor.get_by_role("link", name="doc/signoff")).to_be_visible()  # waiting

        # An invalid verdict: the validator's message at the field.
        page.get_by_role("radiogroup", name="Verdict").get_by_label("GREEN").check()
        score = page.get_by_label("score", exact=True)
        score.fill("0")
        page.get_by_role("button", name="Submit").click()
        score = page.get_by_label("score", exact=True)
        expect(score).to_have_attribute("aria-invalid", "true")
        expect(score).to_have_accessible_description(re.compile("must be >= 1"))
        shot(page, "verdict-invalid")
        assert world.show(request_id)["status"] == "WAITING_HUMAN"

        # A valid one settles the request, and the monitor follows without a reload.
        page.get_by_role("radiogroup", name="Verdict").get_by_label("GREEN").check()
        page.get_by_label("score", exact=True).fill("3")
        page.get_by_role("button", name="Submit").click()
        expect(page.get_by_role("alert")).to_contain_text("Submitted GREEN for doc/signoff.")
        expect(page.get_by_text("Settled by alice")).to_be_visible()
        expect(monitor.get_by_text("✓ signoff  GREEN")).to_be_visible()
        expect(monitor.get_by_role("link", name="doc/signoff")).to_have_count(0)
        shot(monitor, "monitor-run")
        monitor.get_by_role("link", name="Monitor").click()
        expect(monitor.get_by_role("link", name=run_id)).to_be_visible()
        shot(monitor, "monitor")

        out, err = verify.communicate(timeout=VERIFY_SECONDS)
        assert verify.returncode == 0, (out, err)
        assert "GREEN" in out
        context.close()
    finally:
        if verify.poll() is None:
            verify.kill()
            verify.communicate()
        if web is not None:
            assert web.stop() == STOPPED


def test_a_request_settled_elsewhere_shows_on_the_open_page(world: World, browser: Any) -> None:
    from playwright.sync_api import expect

    _, request_id = world.waiting()
    web = WebServer(world)
    try:
        page = signed_in(browser, web)
        page.get_by_role("link", name="doc/signoff").click()
        expect(page.get_by_text("Not claimed.")).to_be_visible()
        assert world.cli("request", "claim", request_id, "--reviewer", "bob")[0] == 0
        expect(page.get_by_text("Claimed by bob")).to_be_visible()  # live
        code, _ = world.cli(
            "request", "submit", request_id, "--reviewer", "bob", "--verdict", "RED",
            "--fields", '{"reason": "not yet"}',
        )  # fmt: skip
        assert code == 0
        expect(page.get_by_text("Settled by bob")).to_be_visible()  # live, no reload
        page.get_by_role("button", name="Claim", exact=True).click()  # the stale button
        expect(page.get_by_role("alert")).to_contain_text("not waiting")
        assert world.show(request_id)["status"] == "RED"
        # Keyboard only: Tab reaches the Monitor link and Enter follows it.
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        expect(page.get_by_role("link", name="Monitor")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page).to_have_title(re.compile(r"^\(0\) Monitor"))
    finally:
        assert web.stop() == STOPPED


def test_a_live_update_of_the_inbox_keeps_the_keyboard_focus(world: World, browser: Any) -> None:
    """The inbox follows the state live; a keyboard user's focus on a request's link must
    survive both the first event (the same table again) and a real change (a claim made
    elsewhere), or Enter would go nowhere."""
    from playwright.sync_api import expect

    _, request_id = world.waiting()
    web = WebServer(world)
    try:
        page = signed_in(browser, web)
        link = page.get_by_role("link", name="doc/signoff")
        link.focus()
        code, claimed = world.cli("request", "claim", request_id, "--reviewer", "bob")
        assert code == 0, claimed
        expect(page.get_by_role("cell", name="bob")).to_be_visible()
        expect(link).to_be_focused()
        page.keyboard.press("Enter")
        expect(page).to_have_title(re.compile(r"doc/signoff"))
    finally:
        assert web.stop() == STOPPED


def test_keyboard_only_claims_releases_and_cancels_through_the_dialogs(
    world: World, browser: Any
) -> None:
    from playwright.sync_api import expect

    _, request_id = world.waiting()
    web = WebServer(world)
    try:
        page = signed_in(browser, web)
        page.get_by_role("link", name="doc/signoff").focus()
        page.keyboard.press("Enter")
        page.get_by_role("button", name="Claim", exact=True).focus()
        page.keyboard.press("Enter")
        expect(page.get_by_text("Claimed by alice (you)")).to_be_visible()
        # The new page shows before its deferred script has bound the dialog buttons: on a
        # loaded machine Enter came first and opened nothing (a CI run). A person's key
        # after the page's load is what is tested.
        page.wait_for_load_state("load")

        unclaim = page.get_by_role("button", name="Unclaim")
        unclaim.focus()
        page.keyboard.press("Enter")
        release = page.get_by_role("dialog", name="Release your claim?")
        expect(release).to_be_visible()
        page.keyboard.press("Escape")  # changed my mind: nothing happens
        expect(release).to_be_hidden()
        assert world.show(request_id)["claim"]["reviewer"] == "alice"
        unclaim.focus()
        page.keyboard.press("Enter")
        expect(release.get_by_role("button", name="Confirm")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.get_by_text("Not claimed.")).to_be_visible()
        assert world.show(request_id)["claim"] is None
        page.wait_for_load_state("load")  # as above: the dialogs bound before the key

        page.get_by_role("button", name="Cancel request").focus()
        page.keyboard.press("Enter")
        cancel = page.get_by_role("dialog", name="Cancel this request?")
        expect(cancel.get_by_label("Reason")).to_be_focused()
        page.keyboard.type("moved to the next release")
        shot(page, "dialog-cancel", full_page=False)
        page.keyboard.press("Tab")
        expect(cancel.get_by_role("button", name="Confirm")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.get_by_text("Status CANCELLED")).to_be_visible()
        view = world.show(request_id)
        assert view["status"] == "CANCELLED" and view["reason"] == "moved to the next release"
    finally:
        assert web.stop() == STOPPED
