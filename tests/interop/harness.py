"""Shared bits of the Python interop clients: the device-sim binary, the expected tools, checks.

Every check prints one line (`ok   - ...` or `FAIL - ...: detail`); `finish()` prints the count
and exits non-zero on any failure (or when nothing was checked at all).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: The simulator binary (.ci/interop.sh builds it once and passes its path).
DEVICE_SIM = os.environ.get("DEVICE_SIM") or str(REPO / "target" / "debug" / "device-sim")

#: Arguments that make tools/list page: 40 fillers of about 300 bytes, 4000-byte pages.
EXTRA_TOOLS = 40
PAGE_BYTES = 4000
PAGING = ["--extra-tools", str(EXTRA_TOOLS), "--page-bytes", str(PAGE_BYTES)]

#: device-sim's own tools that a model sees, in listing order (examples/device-sim/src/board.rs).
MODEL_TOOLS = [
    "self.get_device_status",
    "self.audio_speaker.set_volume",
    "self.screen.set_brightness",
    "self.screen.set_theme",
    "self.relay.set",
    "self.motor.move_to",
    "self.tasks.get_status",
]
#: User-only: hidden from the model's listing, refused when the model calls it.
USER_TOOLS = ["self.reboot"]
FILLERS = [f"self.extra.filler_{i:03}" for i in range(1, EXTRA_TOOLS + 1)]
#: The complete model listing with the paging arguments, in order.
EXPECTED_LISTING = MODEL_TOOLS + FILLERS

_passed = 0
_failed = 0
_started = time.monotonic()


def check(name: str, ok: object, detail: object = "") -> bool:
    """Records one assertion; never raises."""
    global _passed, _failed
    if ok:
        _passed += 1
        print(f"ok   - {name}", flush=True)
    else:
        _failed += 1
        text = repr(detail)
        if len(text) > 1500:
            text = text[:1500] + "..."
        print(f"FAIL - {name}: {text}", flush=True)
    return bool(ok)


def finish(title: str) -> None:
    """Prints the summary line and exits with the verdict."""
    took = time.monotonic() - _started
    print(f"{title}: {_passed} passed, {_failed} failed ({took:.1f} s)", flush=True)
    sys.exit(1 if _failed or not _passed else 0)
