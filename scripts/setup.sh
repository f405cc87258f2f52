#!/usr/bin/env bash
# Installs what linac needs to build and test, if it is missing. Safe to run again.
set -euo pipefail

packages=(cmake ninja-build g++ python3 libgtest-dev
          libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
for tool in /usr/lib/llvm-22/bin/mlir-tblgen /usr/lib/llvm-22/bin/lit /usr/lib/llvm-22/bin/FileCheck; do
  [[ -x $tool ]] || { echo "setup: $tool is missing after install" >&2; exit 1; }
done
