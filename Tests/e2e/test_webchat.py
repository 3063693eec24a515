"""The browser chat (web/) in headless Chromium, talking with `mqttchat chat` through our broker.

The page is served by the broker's own WebSocket listener when it has one, else through Tests/e2e/ws_bridge.py
(see web_helpers.py). A screenshot of every test is saved to the directory printed at the start of the run.
"""

import re
import tempfile
import uuid
from pathlib import Path
from urllib.parse import urlencode

import pytest

from cli_helpers import cli_factory, start_chat  # noqa: F401
from conftest import make_passwd_with_mosquitto
from web_helpers import (REPO, ChatPage, require_browser, start_chromium, start_web_endpoint,
                         stop_web_endpoint)

TIME = r"\[\d\d:\d\d:\d\d\]"


def room_name() -> str:
    return f"room-{uuid.uuid4().hex[:10]}"


def announce(request, text: str) -> None:
    """Prints past pytest's output capture, so the line shows even when every test passes."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\ntest_webchat: {text}", flush=True)


@pytest.fixture(scope="session")
def screenshot_dir(request) -> Path:
    path = Path(tempfile.mkdtemp(prefix="mqttchat-webchat-screenshots-"))
    announce(request, f"screenshots in {path}")
    return path


@pytest.fixture
def page(request, screenshot_dir):
    """A ChatPage in a fresh headless Chromium; screenshot saved and browser quit at teardown."""
    require_browser()
    driver = start_chromium()
    chat = ChatPage(driver)
    yield chat
    try:
        driver.save_screenshot(str(screenshot_dir / f"{request.node.name}.png"))
        failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
        if failed:
            print("\n===== browser console =====\n" + "\n".join(chat.console()))
    finally:
        driver.quit()


@pytest.fixture
def web(tmp_path, request):
    """The page's server and our broker behind it (anonymous clients allowed); stopped at teardown."""
    endpoint = start_web_endpoint(tmp_path)
    announce(request, f"page served by {endpoint.how}")
    yield endpoint
    stop_web_endpoint(endpoint)


def open_chat(page: ChatPage, web, room: str, name: str, **more) -> ChatPage:
    page.open(f"{web.url}/?{urlencode({'room': room, 'name': name, **more})}")
    page.wait_log(rf"^{TIME} \* joined #{re.escape(room)} as ")
    return page


def test_webchat_talks_with_the_terminal_chat(web, page, cli_factory, tmp_path):
    room = room_name()
    open_chat(page, web, room, "alice")
    bob = start_chat(cli_factory, web.broker, room, "bob", tmp_path, "-k", "5")
    bob.wait_for(rf"^{TIME} \* alice is here$")
    page.wait_log(rf"^{TIME} \* bob is here$")
    page.wait_members(["alice", "bob"])
    page.wait_until("bob in the online list", lambda: "bob" in page.texts("#online li"))

    # Browser -> terminal: text (QoS 1), gift (QoS 2), direct message to bob's inbox.
    page.send("hello from the browser")
    page.send("/gift rose 3")
    page.send("/dm bob psst from the browser")
    bob.wait_for(rf"^{TIME} alice: hello from the browser$")
    bob.wait_for(rf"^{TIME} alice: sent a gift: rose x3$")
    bob.wait_for(rf"^{TIME} \(dm from alice\) psst from the browser$")
    page.wait_log(rf"^{TIME} \(dm to bob\) psst from the browser$")

    # Terminal -> browser.
    bob.send("hi alice")
    bob.send("/gift cake 2")
    bob.send("/dm alice back at you")
    page.wait_log(rf"^{TIME} bob: hi alice$")
    page.wait_log(rf"^{TIME} bob: sent a gift: cake x2$")
    page.wait_log(rf"^{TIME} \(dm from bob\) back at you$")
    bob.send("/members")
    assert bob.wait_for(r"^\* members of") == f"* members of #{room}: alice, bob"
    # Each message is shown once: the page's own copy coming back from the broker is dropped by message id.
    log = page.log()
    assert sum(line.endswith("alice: hello from the browser") for line in log) == 1, log
    assert sum(line.endswith("bob: hi alice") for line in log) == 1, log

    # SIGKILL: no DISCONNECT, so the broker publishes bob's will (offline status) and bob leaves the list.
    bob.kill()
    page.wait_log(rf"^{TIME} \* bob went offline$")
    page.wait_members(["alice"])


def test_webchat_shows_markup_as_text(web, page, cli_factory, tmp_path):
    room = room_name()
    page_name = "<img src=x onerror=alert(1)>"
    open_chat(page, web, room, page_name, id="alice")
    script_name = "<script>alert(2)</script>"
    # Not start_chat: its history file is named after --name, and this one has a "/".
    mallory = cli_factory(["chat", "-p", str(web.broker.port), "--room", room, "--name", script_name, "-i", "mallory",
                           "--history-db", str(tmp_path / "mallory.sqlite"), "--linger", "0.5"])
    mallory.wait_for(rf"^\* joined #{re.escape(room)} as ")
    mallory.wait_for(rf"^{TIME} \* {re.escape(page_name)} \[alice\] is here$")
    page.wait_members([f"{page_name} [alice]", f"{script_name} [mallory]"])
    evil = "<script>document.title='pwned'</script><b>bold</b>"
    mallory.send(evil)
    page.wait_log(rf"^{TIME} {re.escape(script_name)} \[mallory\]: {re.escape(evil)}$")
    page.send("<i>not italic</i>")
    mallory.wait_for(rf"^{TIME} {re.escape(page_name)} \[alice\]: <i>not italic</i>$")
    # Shown as text: no element was made from anyone's input, nothing ran.
    made = page.driver.execute_script(
        "return document.querySelectorAll('#log script, #log img, #log b, #log i, #members script, #members img').length")
    assert made == 0
    assert page.driver.title != "pwned"
    assert page.driver.execute_script("return document.querySelectorAll('script').length") == 2  # bundle + chat.js
    assert mallory.finish() == 0
    page.wait_log(rf"^{TIME} \* {re.escape(script_name)} \[mallory\] left$")


def test_webchat_asks_for_a_login_when_the_broker_requires_one(page, cli_factory, tmp_path):
    """With broker-config/chat-secure.conf's rules (passwords, chat.acl), CONNACK 4/5 shows the login form."""
    passwd = tmp_path / "passwd"
    make_passwd_with_mosquitto(passwd, [("alice", "s3cret"), ("bob", "hunter2")])
    options = {"allow_anonymous": "false", "password_file": passwd, "acl_file": REPO / "broker-config" / "chat.acl"}
    web = start_web_endpoint(tmp_path, options)
    try:
        room = room_name()
        page.open(f"{web.url}/?{urlencode({'room': room, 'name': 'alice'})}")
        page.wait_until("the login form", lambda: page.visible("login-form"))
        assert "needs a user name and password" in page.texts("#login-reason")[0]
        assert page.driver.find_element("id", "login-user").get_attribute("value") == "alice"
        page.driver.find_element("id", "login-password").send_keys("wrong\n")
        page.wait_until("the wrong-password message",
                        lambda: "refused this user name or password" in page.texts("#login-reason")[0])
        password = page.driver.find_element("id", "login-password")
        password.clear()
        password.send_keys("s3cret\n")
        page.wait_log(rf"^{TIME} \* joined #{re.escape(room)} as alice")
        bob = start_chat(cli_factory, web.broker, room, "bob", tmp_path, "-u", "bob", "-P", "hunter2")
        page.wait_members(["alice", "bob"])
        page.send("/dm bob only you can read this")
        bob.wait_for(rf"^{TIME} \(dm from alice\) only you can read this$")
        assert bob.finish() == 0
    finally:
        stop_web_endpoint(web)


@pytest.fixture
def bridged_web(tmp_path, request):
    """The page behind the test's bridge, which can cut every connection at once (a network drop)."""
    endpoint = start_web_endpoint(tmp_path, bridged=True)
    announce(request, f"page served by {endpoint.how}")
    yield endpoint
    stop_web_endpoint(endpoint)


def test_webchat_reconnects_after_the_connection_drops(bridged_web, page, cli_factory, tmp_path):
    web = bridged_web
    room = room_name()
    open_chat(page, web, room, "alice")
    bob = start_chat(cli_factory, web.broker, room, "bob", tmp_path)
    page.wait_members(["alice", "bob"])
    web.bridge.drop_connections()
    page.wait_log(rf"^{TIME} \* connection lost, reconnecting in 1 s$")
    page.wait_log(rf"^{TIME} \* reconnected$")
    # Same session: the republished ONLINE makes the membership made before the drop count again.
    bob.wait_for(rf"^{TIME} \* alice went offline$")
    bob.wait_for(rf"^{TIME} \* alice is here$")
    page.wait_members(["alice", "bob"])
    bob.send("still there?")
    page.wait_log(rf"^{TIME} bob: still there\?$")
    page.send("/quit")
    page.wait_log(rf"^{TIME} \* disconnected$")
    bob.wait_for(rf"^{TIME} \* alice left$")  # a user-requested quit: no reconnect, no will
    assert bob.finish() == 0


def test_broker_serves_the_page_itself(tmp_path, request):
    """Only when the broker has its WebSocket listener (`protocol websockets`, `http_dir`); skipped until then."""
    require_browser()
    web = start_web_endpoint(tmp_path, allow_bridge=False)
    try:
        page = request.getfixturevalue("page")
        assert web.bridge is None
        open_chat(page, web, room_name(), "alice")
        page.wait_members(["alice"])
    finally:
        stop_web_endpoint(web)
