"""Helpers for running Airflow as a local service (`make up` / `make down`).

    python -m washline.service wait --url http://127.0.0.1:8080/api/v2/version --timeout 180
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.error
import urllib.request


def wait_for(url: str, timeout: float = 180.0, interval: float = 1.0) -> bool:
    """Poll ``url`` until it answers HTTP 2xx or ``timeout`` seconds pass.

    Returns:
        True when the URL answered, False on timeout.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=min(5.0, interval * 5)) as resp:
                if 200 <= resp.status < 300:
                    return True
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(interval)
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="washline.service")
    sub = parser.add_subparsers(dest="command", required=True)
    wait = sub.add_parser("wait", help="wait until a URL answers 2xx")
    wait.add_argument("--url", required=True)
    wait.add_argument("--timeout", type=float, default=180.0, help="seconds")
    args = parser.parse_args(argv)
    ok = wait_for(args.url, args.timeout)
    if not ok:
        print(f"{args.url} did not answer within {args.timeout:.0f} s", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
