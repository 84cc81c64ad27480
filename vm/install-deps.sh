#!/usr/bin/env bash
# Installs what `numalab vm run` (and .ci/qemu-stage) need on a Debian
# bookworm host, as root (or through sudo):
#   qemu-system-x86   the emulator (TCG: no KVM needed)
#   busybox-static    the guest's shell and tools (must be static)
#   xz-utils          to decompress the kernel's 9p modules
# dpkg-deb, tar and apt-get come with Debian itself. `apt-get update` always
# runs: the guest kernel is the newest linux-image-6.12.*+deb12-amd64-unsigned
# the apt lists know (from bookworm-security), and older builds leave the
# mirror, so stale lists would point at a package that is gone.
set -euo pipefail
SUDO=
if [ "$(id -u)" != 0 ]; then
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
need=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
# A static busybox makes `ldd` fail ("not a dynamic executable").
if [ ! -x /bin/busybox ] || ldd /bin/busybox >/dev/null 2>&1; then
  need+=(busybox-static)
fi
command -v xz >/dev/null 2>&1 || need+=(xz-utils)
$SUDO apt-get update -qq
if [ ${#need[@]} -gt 0 ]; then
  echo "vm/install-deps.sh: installing ${need[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
qemu-system-x86_64 --version | head -1
