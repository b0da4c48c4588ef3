"""A minimal Chrome DevTools Protocol driver for the report tests: load a page, collect console errors,
count elements, evaluate expressions in the page and take a full-page screenshot, with headless Chromium."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import websocket

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--mute-audio",
)


def chromium() -> str | None:
    """The Chromium binary (Debian's ``chromium`` package), or ``None`` when it is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageResult:
    errors: list[str]
    counts: dict[str, int]
    screenshot: bytes
    values: dict = field(default_factory=dict)


def load_page(path: Path, selectors: dict[str, str], *, width: int = 1200, timeout: float = 60.0,
              evaluate: dict[str, str] | None = None) -> PageResult:
    """Open ``path`` in headless Chromium; return console errors, exceptions and failed loads, the number of
    elements matching each CSS selector, the JSON value of each expression in ``evaluate`` (evaluated once the
    page has loaded, at ``width``), and a full-page PNG screenshot."""
    # Chromium's helper processes may still write into the profile while they exit: stop the whole
    # process group, and do not fail a test over a profile directory that is removed a moment late
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen(
            [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        try:
            port = _devtools_port(Path(profile), proc, timeout)
            return _drive(port, path, selectors, width, timeout, evaluate or {})
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    """Terminate Chromium and every helper it started (its own process group), then reap it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(10)
            break
        except subprocess.TimeoutExpired:
            continue
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # helpers of the group outlive the leader for a moment
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


def _devtools_port(profile: Path, proc: subprocess.Popen, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    marker = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chromium exited with {proc.returncode}")
        if marker.exists() and marker.read_text().strip():
            return int(marker.read_text().split()[0])
        time.sleep(0.1)
    raise TimeoutError("chromium did not open its DevTools port")


class _Session:
    def __init__(self, url: str, timeout: float) -> None:
        self.ws = websocket.create_connection(url, timeout=timeout, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict] = []

    def call(self, method: str, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, method: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} within {timeout} s")
            self.events.append(json.loads(self.ws.recv()))


def _drive(port: int, path: Path, selectors: dict[str, str], width: int, timeout: float,
           evaluate: dict[str, str]) -> PageResult:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as resp:
        pages = [t for t in json.load(resp) if t.get("type") == "page"]
    s = _Session(pages[0]["webSocketDebuggerUrl"], timeout)
    try:
        for domain in ("Page", "Runtime", "Log", "Network"):
            s.call(f"{domain}.enable")
        s.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)
        s.call("Page.navigate", url=path.resolve().as_uri())
        s.wait_for("Page.loadEventFired", timeout)
        counts = {
            name: s.call("Runtime.evaluate", expression=f"document.querySelectorAll({json.dumps(css)}).length",
                         returnByValue=True)["result"]["value"]
            for name, css in selectors.items()
        }
        values = {}
        for name, expression in evaluate.items():
            result = s.call("Runtime.evaluate", expression=expression, returnByValue=True)
            if "exceptionDetails" in result:
                raise RuntimeError(f"{name}: {result['exceptionDetails']}")
            values[name] = result["result"].get("value")
        height = s.call("Runtime.evaluate", expression="document.documentElement.scrollHeight",
                        returnByValue=True)["result"]["value"]
        s.call("Emulation.setDeviceMetricsOverride", width=width, height=int(height), deviceScaleFactor=1,
               mobile=False)
        shot = base64.b64decode(s.call("Page.captureScreenshot", format="png")["data"])
        return PageResult(errors=_errors(s.events), counts=counts, screenshot=shot, values=values)
    finally:
        s.ws.close()


def _errors(events: list[dict]) -> list[str]:
    out = []
    for e in events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
            out.append(f"console.{params['type']}: " + " ".join(str(a.get("value")) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            out.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
        elif method == "Log.entryAdded" and params["entry"].get("level") in ("error", "warning"):
            out.append(f"log {params['entry']['level']}: {params['entry'].get('text')} {params['entry'].get('url', '')}")
        elif method == "Network.loadingFailed":
            out.append(f"load failed: {params.get('errorText')}")
        elif method == "Network.requestWillBeSent" and not params["request"]["url"].startswith(("file:", "data:")):
            out.append(f"network request: {params['request']['url']}")
    return out
