#!/usr/bin/env bash
# Installs what proftrace needs from Debian's packages. Idempotent: when
# everything is already there it changes nothing and asks no server.
set -euo pipefail

packages=(
  cmake g++ clang libomp-dev make binutils pkg-config python3 python3-venv
  libboost-json1.81-dev libboost-iostreams1.81-dev
  doctest-dev libbenchmark-dev
  libzstd-dev zlib1g-dev
  chromium
  valgrind likwid
  libopenmpi-dev openmpi-bin
  libotf2-trace-dev otf2-tools
  gfortran
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all dependencies present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
