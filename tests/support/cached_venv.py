"""A virtualenv made once from PyPI in the build tree and reused by a test.

    from cached_venv import ensure_venv, SKIP
    python = ensure_venv(venv_dir, [["llnl-hatchet", "llnl-thicket"]], "Hatchet")
    if python is None:
        sys.exit(SKIP)  # PyPI cannot be reached: skipped, with a message

Each list of requirements is one pip call (a list may start with
"--no-deps"); a stamp file marks the venv complete, so a test killed
mid-install makes it again.
"""
import os
import shutil
import subprocess
import sys
import time

SKIP = 77


def venv_python(venv):
    return os.path.join(venv, "bin", "python")


def ensure_venv(venv, steps, label, timeout=600):
    stamp = os.path.join(venv, ".proftrace-venv-ready")
    if os.path.exists(stamp):
        return venv_python(venv)
    started = time.monotonic()
    shutil.rmtree(venv, ignore_errors=True)
    made = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True, text=True)
    if made.returncode != 0:
        print("SKIP: cannot create a virtualenv:", made.stderr.strip()[-400:])
        return None
    pip = [venv_python(venv), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--timeout", "20"]
    for step in steps:
        try:
            done = subprocess.run(pip + step, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            shutil.rmtree(venv, ignore_errors=True)
            print(f"SKIP: installing {label} from PyPI timed out ({e.timeout} s)")
            return None
        if done.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            print(f"SKIP: {label} could not be installed from PyPI (unreachable?):", done.stderr.strip()[-400:])
            return None
    with open(stamp, "w") as f:
        f.write(f"installed in {time.monotonic() - started:.1f} s\n")
    print(f"{label} installed in {time.monotonic() - started:.1f} s")
    return venv_python(venv)
