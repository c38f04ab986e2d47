"""From install to the first receipt (issue 41): a new user's first minute, scripted and timed.

    python benchmarks/install.py [--rounds N] [--wheel WHEEL] [--pipx PIPX]

Builds the wheel from this checkout (or takes `--wheel`), then, each round, from nothing installed to a receipt
over HTTP: `pipx install WHEEL` (pipx on PATH or `--pipx`; else a fresh venv and `pip install WHEEL`, said in the
output), then in an empty folder `tagengine campaign new heist blades-like`, `tagengine serve --upstream demo
--campaign heist --port 0`, and one chat turn posted to it, whose answer must carry a receipt (`result="ok"`).
Prints each phase's median over the rounds and the total. The package cache is warm: one install first, not
timed, fills pip's cache with the dependencies' wheels (and pipx's shared pip), as on a machine that has
installed Python tools before; a cold cache adds the download of the dependencies (a few MB). Figures are in
docs/install.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("install", "campaign new", "serve started", "first receipt")


def build_wheel(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w",
                    str(out), str(ROOT)], check=True)
    (whl,) = out.glob("tagengine-*.whl")
    return whl


class Installer:
    """pipx into a home of its own (kept between rounds: its shared pip is warm, as a user's is), or a fresh venv
    and pip."""

    def __init__(self, work: Path, pipx: str | None) -> None:
        self.work, self.pipx = work, pipx
        self.env = {**os.environ, "PIPX_HOME": str(work / "pipx-home"), "PIPX_BIN_DIR": str(work / "pipx-bin"),
                    "PIPX_MAN_DIR": str(work / "pipx-man")}

    @property
    def name(self) -> str:
        return f"pipx install ({self.pipx})" if self.pipx else "python -m venv + pip install (no pipx found)"

    def install(self, wheel: Path, round_dir: Path) -> str:
        """Install the wheel; the path of its `tagengine`."""
        if self.pipx:
            subprocess.run([self.pipx, "install", "--force", str(wheel)], check=True, env=self.env,
                           capture_output=True)
            return str(self.work / "pipx-bin" / "tagengine")
        env_dir = round_dir / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
        subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], check=True,
                       capture_output=True)
        return str(env_dir / "bin" / "tagengine")

    def uninstall(self) -> None:
        if self.pipx:
            subprocess.run([self.pipx, "uninstall", "tagengine"], env=self.env, capture_output=True)


def first_receipt(exe: str, folder: Path) -> dict[str, float]:
    """From an installed tagengine: a campaign, the server, one turn; each phase's end, in seconds from the call."""
    t0 = time.perf_counter()
    marks: dict[str, float] = {}
    data = folder / "data"
    subprocess.run([exe, "campaign", "new", "heist", "blades-like", "--data", str(data)], check=True, cwd=folder,
                   capture_output=True)
    marks["campaign new"] = time.perf_counter() - t0
    proc = subprocess.Popen([exe, "serve", "--upstream", "demo", "--campaign", "heist", "--port", "0", "--data",
                             str(data)], cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    url: list[str] = []
    seen = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            hit = re.search(r"running on (http://127\.0\.0\.1:\d+)", line)
            if hit and not url:
                url.append(hit.group(1))
                seen.set()
        seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        seen.wait(120)
        if not url:
            raise SystemExit("tagengine serve did not start")
        marks["serve started"] = time.perf_counter() - t0
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "We slip in."}]}).encode()
        req = urllib.request.Request(f"{url[0]}/v1/chat/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            answer = json.loads(r.read())["choices"][0]["message"]["content"]
        if 'result="ok"' not in answer:
            raise SystemExit(f"no receipt in the first answer: {answer[:200]}")
        marks["first receipt"] = time.perf_counter() - t0
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(5)
    return marks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--wheel", type=Path, help="a built wheel (default: build one from this checkout)")
    ap.add_argument("--pipx", default=shutil.which("pipx"), help="the pipx to time (default: the one on PATH)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tagengine-install-") as tmp:
        work = Path(tmp)
        wheel = args.wheel or build_wheel(work / "dist")
        installer = Installer(work, args.pipx)
        print(f"{wheel.name}: {wheel.stat().st_size / 1e6:.2f} MB; {installer.name}; Python "
              f"{sys.version.split()[0]}; warm package cache")
        warm = work / "warm"
        warm.mkdir()
        installer.install(wheel, warm)  # not timed: fills the caches
        installer.uninstall()
        rows: dict[str, list[float]] = {p: [] for p in (*PHASES, "total")}
        for n in range(args.rounds):
            folder = work / f"round-{n}"
            folder.mkdir()
            t0 = time.perf_counter()
            exe = installer.install(wheel, folder)
            installed = time.perf_counter() - t0
            marks = first_receipt(exe, folder)
            installer.uninstall()
            ends = {"install": installed, **{k: installed + v for k, v in marks.items()}}
            last = 0.0
            for phase in PHASES:
                rows[phase].append(ends[phase] - last)
                last = ends[phase]
            rows["total"].append(ends["first receipt"])
            print(f"round {n + 1}: {ends['first receipt']:.2f} s to the first receipt")
        print(f"\n{'phase':<16}{'median s':>10}{'min':>8}{'max':>8}   ({args.rounds} rounds)")
        for phase, values in rows.items():
            print(f"{phase:<16}{statistics.median(values):>10.2f}{min(values):>8.2f}{max(values):>8.2f}")


if __name__ == "__main__":
    main()
