"""The console in a real browser (Debian's headless Chromium driven by Playwright) on a real 3-node
farm over TLS: it lists the members and marks the leader, removes a member, refuses a wrong password.

Set GARLICFARM_SCREENSHOT=docs/admin-console.png to also save the screenshot docs/admin.md shows
(scripts/admin-screenshot.sh does).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright import sync_api  # the test extra installs it

from tests.admin.consolefarm import ConsoleFarm

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
expect = sync_api.expect


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleFarm]:
    farm = ConsoleFarm(tmp_path_factory.mktemp("console") / "farm", 3)
    try:
        farm.start_all()
        farm.wait_for_leader()
        yield farm
    finally:
        farm.stop_all()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is not installed: run scripts/system-deps.sh (Debian's chromium)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        yield browser
        browser.close()


def open_console(browser: Any, farm: ConsoleFarm, node: int, password: str | None = None) -> tuple[Any, Any]:
    context = browser.new_context(
        ignore_https_errors=True,  # the farm's own CA; the browser does not know it
        http_credentials={"username": "farm", "password": password or farm.password()},
        viewport={"width": 1400, "height": 860},
    )
    page = context.new_page()
    response = page.goto(farm.admin_url(node))
    return page, response


def members_on_page(page: Any) -> list[int]:
    return sorted(
        int(x)
        for x in page.locator("tr[data-member-id]").evaluate_all("rows => rows.map(r => r.dataset.memberId)")
    )


def wait_until(check: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    raise AssertionError(f"not true within {timeout}s")


def test_wrong_password_is_refused(browser: Any, farm: ConsoleFarm) -> None:
    page, response = open_console(browser, farm, 1, password="not the password")
    assert response.status == 401
    assert page.locator("tr[data-member-id]").count() == 0
    page.context.close()


def test_page_lists_the_members_and_marks_the_leader(browser: Any, farm: ConsoleFarm) -> None:
    leader = farm.wait_for_leader()
    page, response = open_console(browser, farm, 1)
    assert response.status == 200
    page.wait_for_selector("tr[data-member-id]")
    assert members_on_page(page) == [1, 2, 3]
    page.wait_for_selector(f"tr.leader[data-member-id='{leader}']")
    assert page.locator("tr[data-role=leader]").count() == 1
    assert page.locator("#leader").inner_text() == f"server {leader}"
    # the status reports come in: a publisher is chosen and every member is healthy
    expect(page.locator("tr[data-health=ok]")).to_have_count(3, timeout=30_000)
    expect(page.locator("#publisher")).to_have_text(re.compile(r"server \d+"))
    publisher = int(page.locator("#publisher").inner_text().split()[-1])
    page.context.close()
    # the publisher's own console shows the Meta LS2 it signed: master, time left, offline expiry
    page, _ = open_console(browser, farm, publisher)
    signed = page.locator("#signed-metals")
    expect(signed).to_contain_text("Signed here: master ", timeout=30_000)
    expect(signed).to_contain_text(re.compile(r"published \S+, \d+ s left"))
    expect(signed).to_contain_text("offline signature expires")
    expect(signed).to_contain_text(".b32.i2p cost ")
    screenshot = os.environ.get("GARLICFARM_SCREENSHOT")
    if screenshot:
        leader_page, _ = open_console(browser, farm, leader)
        expect(leader_page.locator("tr[data-health=ok]")).to_have_count(3, timeout=30_000)
        leader_page.wait_for_timeout(float(os.environ.get("GARLICFARM_SCREENSHOT_WAIT", "20")) * 1000)
        leader_page.screenshot(path=screenshot, full_page=True)
        leader_page.context.close()
    page.context.close()


def test_step_down_from_the_leaders_page(browser: Any, farm: ConsoleFarm) -> None:
    leader = farm.wait_for_leader()
    follower = next(i for i in (1, 2, 3) if i != leader)
    other, _ = open_console(browser, farm, follower)
    other.wait_for_selector("tr[data-member-id]")
    expect(other.locator("#step-down")).to_be_disabled()  # only the leader's console can step down
    other.context.close()
    page, _ = open_console(browser, farm, leader)
    expect(page.locator("#step-down")).to_be_enabled(timeout=15_000)
    page.on("dialog", lambda dialog: dialog.accept())
    page.locator("#step-down").click()
    page.wait_for_selector("#message:not([hidden])")
    assert "step-down: done" in page.locator("#message").inner_text()
    expect(page.locator("#leader")).not_to_have_text(f"server {leader}", timeout=15_000)
    expect(page.locator("#step-down")).to_be_disabled(timeout=15_000)
    page.context.close()


def test_removing_a_member_from_the_page(browser: Any, farm: ConsoleFarm) -> None:
    leader = farm.wait_for_leader()
    # a follower's console removes the other follower: the action is forwarded to the leader
    console, victim = [i for i in (1, 2, 3) if i != leader]
    page, _ = open_console(browser, farm, console)
    page.wait_for_selector(f"tr[data-member-id='{victim}']")
    questions: list[str] = []

    def confirm(dialog: Any) -> None:
        questions.append(dialog.message)
        dialog.accept()

    page.on("dialog", confirm)
    page.locator(f"tr[data-member-id='{victim}'] button[data-action=remove]").click()
    page.wait_for_selector("#message:not([hidden])")
    message = page.locator("#message").inner_text()
    assert "remove-member: done" in message, message
    assert questions and f"Remove server {victim}" in questions[0]
    expect(page.locator(f"tr[data-member-id='{victim}']")).to_have_count(0, timeout=15_000)
    assert members_on_page(page) == sorted({1, 2, 3} - {victim})

    def removed_everywhere() -> bool:
        statuses = [farm.status(i) for i in (leader, console)]
        return all(
            s is not None and [m["id"] for m in s["members"]] == sorted({leader, console}) for s in statuses
        )

    wait_until(removed_everywhere)
    page.context.close()
