"""Which wheel of each package in requirements.lock every Linux platform gets, for test_platforms.py.

requirements.lock holds hashes, not file names, so whether the image can be built for a platform (every
locked package has a wheel for it: the image installs with --only-binary=:all: --require-hashes) cannot
be read from it offline. This records it: one `pip download` of the whole lock per platform, as the image's
pip would choose (CPython 3.11, the manylinux tags UBI 9's glibc 2.34 accepts), PyPI's defaults only.

    .venv/bin/python -m tests.tekton.lock_wheels      # rewrites tests/tekton/lock-wheels.txt (make lock runs it)

Lines: ``PLATFORM NAME==VERSION FILE sha256:HASH``, or ``PLATFORM NAME==VERSION - no-wheel`` for the
first package pip found no wheel for (pip stops there: later packages of that platform are not listed).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
RECORD = Path(__file__).with_name("lock-wheels.txt")
PYTHON = "3.11"
GLIBC = (2, 34)  # UBI 9's glibc: manylinux wheels up to manylinux_2_34 install there
# Every platform Red Hat publishes ubi9/ubi-minimal for, as Tekton's tekton.dev/platforms spells them.
ARCH = {"linux/amd64": "x86_64", "linux/arm64": "aarch64", "linux/ppc64le": "ppc64le", "linux/s390x": "s390x"}
MANYLINUX = (
    "manylinux_2_34",
    "manylinux_2_28",
    "manylinux_2_17",
    "manylinux2014",
    "manylinux_2_5",
    "manylinux1",
)


def download(platform: str, dest: Path) -> tuple[list[Path], str]:
    """(the wheels pip picked, the name==version it found none for or "")."""
    arch = ARCH[platform]
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--require-hashes",
            "-r", str(LOCK), "--python-version", PYTHON, "--implementation", "cp",
            "--abi", f"cp{PYTHON.replace('.', '')}", "-d", str(dest)]  # fmt: skip
    for tag in MANYLINUX:
        argv += ["--platform", f"{tag}_{arch}"]
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": "", "PIP_CONSTRAINT": ""}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode == 0:
        return sorted(dest.glob("*.whl")), ""
    missing = re.search(r"No matching distribution found for (\S+)", proc.stderr)
    if not missing:
        raise SystemExit(f"pip download for {platform} failed:\n{proc.stderr[-3000:]}")
    return [], missing[1]


def lines() -> list[str]:
    out = []
    for platform in ARCH:
        with tempfile.TemporaryDirectory() as tmp:
            wheels, missing = download(platform, Path(tmp))
            if missing:
                out.append(f"{platform} {missing} - no-wheel")
                continue
            for wheel in wheels:
                name, version, _, _ = parse_wheel_filename(wheel.name)
                digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
                out.append(f"{platform} {canonicalize_name(name)}=={version} {wheel.name} sha256:{digest}")
    return out


if __name__ == "__main__":
    header = [
        "# Written by `python -m tests.tekton.lock_wheels` (make lock) from requirements.lock: the wheel pip picks",
        f"# per platform for CPython {PYTHON} on glibc {GLIBC[0]}.{GLIBC[1]} (UBI 9). Do not edit; test_platforms.py reads it.",
    ]
    RECORD.write_text("\n".join([*header, *lines()]) + "\n")
    print(f"wrote {RECORD.relative_to(ROOT)}")
