#!/usr/bin/env bash
# Builds and tests the Conan 2 package offline: Conan (pinned) in a private
# virtual environment, a private Conan home, and `conan create` with the
# repository's profile that takes Boost, doctest and CMake from the machine.
#   bash scripts/conan-package.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/build-conan"
conan_version=2.9.3

if [ ! -x "$work/venv/bin/conan" ] || ! "$work/venv/bin/conan" --version | grep -q "$conan_version"; then
  rm -rf "$work/venv"
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q "conan==$conan_version"
fi
export CONAN_HOME="$work/home"
mkdir -p "$CONAN_HOME"
echo "=== conan create (Conan $conan_version, offline profile)"
"$work/venv/bin/conan" create "$root" -pr:a "$root/conan/offline.profile" --build=missing --no-remote
