"""A virtualenv with packages from PyPI, made once in the build tree and
reused, for the tests that read proftrace's files with other projects'
readers (check_perfetto_proto.py, check_otf2.py). Where it cannot be made
(PyPI unreachable) ensure_venv says why and the test exits 77 (skipped).

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
    import pypi_venv
    if not pypi_venv.ensure_venv(venv, ["otf2"], "otf2"):
        sys.exit(pypi_venv.SKIP)
    subprocess.run([pypi_venv.python_of(venv), "-c", probe])
"""
import os
import shutil
import subprocess
import sys

SKIP = 77


def python_of(venv):
    return os.path.join(venv, "bin", "python")


def ensure_venv(venv, packages, tag):
    """True once VENV holds PACKAGES (a stamp named after TAG says so)."""
    stamp = os.path.join(venv, f".proftrace-{tag}-ready")
    if os.path.exists(stamp):
        return True
    shutil.rmtree(venv, ignore_errors=True)
    made = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True, text=True)
    if made.returncode != 0:
        print("SKIP: cannot create a virtualenv:", made.stderr.strip()[-400:])
        return False
    pip = [python_of(venv), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--timeout", "20"] + packages
    try:
        done = subprocess.run(pip, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as e:
        shutil.rmtree(venv, ignore_errors=True)
        print(f"SKIP: installing {tag} from PyPI timed out ({e.timeout} s)")
        return False
    if done.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        print(f"SKIP: {tag} could not be installed from PyPI (unreachable?):", done.stderr.strip()[-400:])
        return False
    open(stamp, "w").close()
    return True
