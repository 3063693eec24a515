"""Helpers of the browser chat test (test_webchat.py): where the page is served from, headless Chromium, and a
page object with bounded waits.

The page needs HTTP for web/ and MQTT over WebSockets on /mqtt of the same host. Our broker does both when it
accepts `protocol websockets` + `http_dir` (being added on another branch); until then the test serves web/ and
bridges /mqtt to the broker's TCP port itself (ws_bridge.py), so the browser test runs either way.
"""

from __future__ import annotations

import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import MQTTCHAT_ONLY_LINES, Broker, free_port
from ws_bridge import WebSocketBridge

REPO = Path(__file__).resolve().parents[2]
WEB_DIR = REPO / "web"
BUNDLE = WEB_DIR / "vendor" / "mqtt.bundle.js"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT = 15.0
# Our broker refuses options it does not implement with exit 78 (EX_CONFIG) naming the line (docs/broker.md).
CONFIG_REFUSED = 78


class WebSocketBroker(Broker):
    """Our broker with a TCP listener (for `mqttchat chat`) and a WebSocket listener serving web/ (for the page).
    `options` are written before the listeners, where they apply to both (mosquitto's global options)."""

    def __init__(self, tmp: Path, options: dict):
        super().__init__("mqttchat", tmp, options)
        # After the base class, which sets ws_port only for its own `websockets=True` listener; this class writes
        # its listeners itself (the global options must come before both).
        self.ws_port = free_port()
        self.conf.write_text(self.config_text())

    def config_text(self) -> str:
        lines = ["log_dest stdout", *(f"{k} {v}" for k, v in self.options.items() if k != "sys_interval")]
        lines += [f"listener {self.port} 127.0.0.1", f"listener {self.ws_port} 127.0.0.1", "protocol websockets",
                  f"http_dir {WEB_DIR}"]
        lines += MQTTCHAT_ONLY_LINES  # as every broker of the suite (e.g. threads 2 in test.sh's second pass)
        return "\n".join(lines) + "\n"

    def start(self, ready_timeout: float = 10.0) -> None:
        super().start(ready_timeout)
        deadline = time.monotonic() + ready_timeout
        while True:  # the WebSocket listener may open just after the TCP one
            try:
                socket.create_connection(("127.0.0.1", self.ws_port), timeout=0.5).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"no WebSocket listener on {self.ws_port}:\n{self.output()}") from None
                time.sleep(0.05)


@dataclass
class WebEndpoint:
    """Where the page is (`url`) and the broker behind it (`broker`, whose `port` is its TCP listener)."""
    url: str
    broker: Broker
    bridge: WebSocketBridge | None  # None when the broker serves the page itself
    how: str


def broker_websockets_refusal(broker: Broker) -> str | None:
    """Starts `broker`; returns why it refused its WebSocket listener (then it is not running), or None if it runs."""
    try:
        broker.start()
        return None
    except RuntimeError as error:
        refused_config = broker.proc is not None and broker.proc.returncode == CONFIG_REFUSED
        broker.stop()  # closes its log; the process has exited
        if refused_config and "protocol" in broker.output():
            refused = [line for line in broker.output().splitlines() if "protocol" in line]
            return refused[-1].strip() if refused else "protocol websockets refused"
        raise error


def start_web_endpoint(tmp: Path, options: dict | None = None, allow_bridge: bool = True,
                       bridged: bool = False) -> WebEndpoint:
    """Our broker serving web/ over its own WebSocket listener when it can, else (or when `bridged`, for tests
    that must cut connections) our broker on TCP behind ws_bridge.py. Stop it with stop_web_endpoint."""
    options = options or {"allow_anonymous": "true"}
    refusal = "the test asked for the bridge, which can drop connections"
    if not bridged:
        native_dir = tmp / "ws-broker"
        native_dir.mkdir()
        native = WebSocketBroker(native_dir, options)
        refusal = broker_websockets_refusal(native)
        if refusal is None:
            return WebEndpoint(f"http://127.0.0.1:{native.ws_port}", native, None,
                               "the broker's own WebSocket listener")
    if not allow_bridge:
        pytest.skip(f"the broker has no WebSocket listener yet: {refusal}")
    tcp_dir = tmp / "tcp-broker"
    tcp_dir.mkdir()
    broker = TCPBroker(tcp_dir, options)
    broker.start()
    bridge = WebSocketBridge(WEB_DIR, broker.port).start()
    return WebEndpoint(f"http://127.0.0.1:{bridge.port}", broker, bridge,
                       f"Tests/e2e/ws_bridge.py to the broker's TCP port ({refusal})")


class TCPBroker(Broker):
    """Our broker with `options` before its one TCP listener."""

    def __init__(self, tmp: Path, options: dict):
        super().__init__("mqttchat", tmp, options)

    def config_text(self) -> str:
        lines = ["log_dest stdout", *(f"{k} {v}" for k, v in self.options.items() if k != "sys_interval")]
        return "\n".join(lines + [f"listener {self.port} 127.0.0.1", *MQTTCHAT_ONLY_LINES]) + "\n"


def stop_web_endpoint(endpoint: WebEndpoint) -> None:
    if endpoint.bridge is not None:
        endpoint.bridge.stop()
    endpoint.broker.stop()


def require_browser() -> None:
    """Skips (with what to install) when the browser, its driver, selenium or the mqtt.js bundle is missing."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("python selenium")
    if not BUNDLE.is_file():
        missing.append(str(BUNDLE.relative_to(REPO)))
    if missing:
        pytest.skip(f"browser test needs {', '.join(missing)}: run scripts/setup.sh")


def start_chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,750"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The system driver, so selenium never tries to download one.
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    return driver


class ChatPage:
    """The browser chat in one Chromium tab, read through the DOM with bounded waits."""

    def __init__(self, driver):
        self.driver = driver

    def open(self, url: str) -> "ChatPage":
        self.driver.get(url)
        return self

    def texts(self, selector: str) -> list[str]:
        return self.driver.execute_script(
            "return Array.from(document.querySelectorAll(arguments[0]), e => e.textContent)", selector)

    def log(self) -> list[str]:
        return self.texts("#log li")

    def members(self) -> list[str]:
        return self.texts("#members li")

    def wait_until(self, what: str, predicate, timeout: float = WAIT):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"page: {what} not within {timeout}s; log={self.log()} members={self.members()} "
                                     f"connection={self.texts('#connection')}")
            time.sleep(0.1)

    def wait_log(self, pattern: str, timeout: float = WAIT) -> str:
        regex = re.compile(pattern)
        return self.wait_until(f"a log line matching {pattern!r}",
                               lambda: next((line for line in self.log() if regex.search(line)), None), timeout)

    def wait_members(self, expected: list[str], timeout: float = WAIT) -> None:
        self.wait_until(f"members == {expected}", lambda: self.members() == expected, timeout)

    def send(self, line: str) -> None:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys

        box = self.driver.find_element(By.ID, "message")
        box.send_keys(line + Keys.ENTER)

    def visible(self, element_id: str) -> bool:
        return self.driver.execute_script("return !document.getElementById(arguments[0]).hidden", element_id)

    def console(self) -> list[str]:
        try:
            return [f"{e['level']} {e['message']}" for e in self.driver.get_log("browser")]
        except Exception as error:  # a dead session must not hide the test's own failure
            return [f"<no console log: {error}>"]

