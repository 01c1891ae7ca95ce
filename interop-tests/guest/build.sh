#!/usr/bin/env bash
# Builds the interop guest once and prints its directory (the only thing written to stdout).
#
# The guest is a Debian bookworm minbase root with the packages of packages.txt, Debian's own
# kernel (linux-image-amd64: vmlinuz for qemu -kernel, modules copied into the root and indexed
# with depmod), a busybox initramfs (initramfs-init) and the root as a raw ext4 image made with
# `mkfs.ext4 -d` (no loop mount, so no privileges beyond chroot). It is cached under
# target/interop-guest/guest-<key>, where <key> hashes packages.txt, this script and
# initramfs-init: a changed package list builds a new guest, an unchanged one is reused.
# Downloaded .debs are kept in target/interop-guest/debs so a rebuild fetches only what changed.
#
# Needs root (debootstrap, chroot) and the host tools debootstrap, busybox-static, e2fsprogs,
# cpio; scripts/test.sh installs them when missing.
#
# Environment:
#   PNFS_INTEROP_DIR      cache directory (default <repo>/target/interop-guest)
#   PNFS_DEBIAN_MIRROR    Debian mirror (default http://deb.debian.org/debian)
#   PNFS_GUEST_KERNEL     a linux-image .deb to boot instead of packages.txt's kernel (for example
#                         bookworm-backports' 6.12, to tell a bug of the 6.1 client from ours);
#                         such a guest is cached beside the default one, not in its place
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
base=${PNFS_INTEROP_DIR:-$repo/target/interop-guest}
mirror=${PNFS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm

log() { printf '[guest build] %s\n' "$*" >&2; }

kernel_deb=${PNFS_GUEST_KERNEL:-}
if [[ -n $kernel_deb && ! -f $kernel_deb ]]; then
    log "PNFS_GUEST_KERNEL=$kernel_deb: no such file (a linux-image-*.deb)"
    exit 1
fi
key=$({ cat "$here/packages.txt" "$here/build.sh" "$here/initramfs-init"
    [[ -z $kernel_deb ]] || basename "$kernel_deb"; } | sha256sum | cut -c1-16)
dir=$base/guest-$key
if [[ -f $dir/ready ]]; then
    echo "$dir"
    exit 0
fi

# One build at a time (test binaries may start together); the winner builds, the others reuse.
mkdir -p "$base"
exec 9>"$base/.lock"
flock 9
if [[ -f $dir/ready ]]; then
    echo "$dir"
    exit 0
fi

missing=()
for tool in debootstrap mkfs.ext4 cpio gzip chroot dpkg-deb apt-get; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
# (a static busybox: the initramfs has no libc)
[[ -x /bin/busybox && " $(/bin/busybox --list 2>/dev/null | tr '\n' ' ') " == *" switch_root "* ]] ||
    missing+=(busybox-static)
if ((${#missing[@]})); then
    log "missing host tools: ${missing[*]}"
    log "install them with: apt-get install debootstrap busybox-static e2fsprogs cpio (or run ./scripts/test.sh)"
    exit 1
fi
if [[ $(id -u) != 0 ]]; then
    log "building the guest needs root (debootstrap and chroot)"
    exit 1
fi

start=$(date +%s)
work=$dir.tmp
rm -rf "$work"
mkdir -p "$work" "$base/debs"
root=$work/root

mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$here/packages.txt" | grep -v '^$')
include=()
kernel_meta=
for p in "${packages[@]}"; do
    if [[ $p == linux-image-* ]]; then kernel_meta=$p; else include+=("$p"); fi
done
[[ -n $kernel_meta ]] || { log "packages.txt names no linux-image-* package"; exit 1; }

log "debootstrap $suite minbase with: ${include[*]}"
inc=$(IFS=,; echo "${include[*]}")
if ! debootstrap --variant=minbase --include="$inc" --cache-dir="$base/debs" \
    "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" >&2
    [[ -f $root/debootstrap/debootstrap.log ]] && tail -n 30 "$root/debootstrap/debootstrap.log" >&2
    exit 1
fi
log "debootstrap done in $(($(date +%s) - start)) s"

# The kernel package, unpacked (not installed: its postinst wants an initramfs generator, and
# the guest boots with our own initramfs instead). The metapackage names the real package.
download() {
    (cd "$base/debs" && apt-get download "$@" >/dev/null 2>&1) ||
        { apt-get update -qq >&2 && (cd "$base/debs" && apt-get download "$@" >&2); }
}
if [[ -n $kernel_deb ]]; then
    deb=$kernel_deb
    kpkg=$(dpkg-deb -f "$deb" Package)
    kver=${kpkg#linux-image-}
else
    kpkg=$(apt-cache depends "$kernel_meta" 2>/dev/null |
        sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n 1)
    if [[ -z $kpkg ]]; then
        apt-get update -qq >&2
        kpkg=$(apt-cache depends "$kernel_meta" | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n 1)
    fi
    [[ -n $kpkg ]] || { log "cannot resolve $kernel_meta to a kernel package"; exit 1; }
    kver=${kpkg#linux-image-}
    deb=$(ls -t "$base/debs/${kpkg}_"*.deb 2>/dev/null | head -n 1 || true)
    if [[ -z $deb ]]; then
        log "downloading $kpkg"
        download "$kpkg"
        deb=$(ls -t "$base/debs/${kpkg}_"*.deb | head -n 1)
    fi
fi
log "kernel $kver from $(basename "$deb")"
dpkg-deb -x "$deb" "$work/kernel"
cp "$work/kernel/boot/vmlinuz-$kver" "$work/vmlinuz"
mkdir -p "$root/usr/lib/modules"
cp -a "$work/kernel/lib/modules/$kver" "$root/usr/lib/modules/"
# Drivers no virtual machine of ours uses: leaving them out keeps the image small.
(cd "$root/usr/lib/modules/$kver/kernel" &&
    rm -rf drivers/gpu drivers/media drivers/net/wireless drivers/staging drivers/bluetooth \
        drivers/iio drivers/hid drivers/input drivers/usb drivers/isdn sound net/bluetooth \
        net/mac80211 net/wireless)
chroot "$root" depmod "$kver"
# (xfs and loop: the XFS image servers.sh makes for SERVER_FS=xfs.)
for m in nfs nfsv4 nfs_layout_nfsv41_files nfs_layout_flexfiles nfsd rdma_rxe rpcrdma veth xfs loop; do
    chroot "$root" modinfo -k "$kver" -F filename "$m" >/dev/null ||
        { log "kernel $kver has no module $m"; exit 1; }
done

# The initramfs: static busybox and the modules that reach the root image, loaded in the
# order `modprobe --show-depends` gives (softdeps such as ext4's crc32c included).
log "initramfs"
init=$work/initramfs
mkdir -p "$init"/{bin,dev,proc,sys,newroot}
# The kernel opens /dev/console for /init before anything can mount devtmpfs.
mknod -m 600 "$init/dev/console" c 5 1
cp /bin/busybox "$init/bin/busybox"
cp "$here/initramfs-init" "$init/init"
chmod +x "$init/init"
: >"$init/modules.order"
chroot "$root" modprobe -S "$kver" -a --show-depends \
    virtio_pci virtio_blk crc32c_generic ext4 |
    sed -n 's/^insmod \([^ ]*\).*/\1/p' | awk '!seen[$0]++' |
    while read -r ko; do
        mkdir -p "$init$(dirname "$ko")"
        # (newer Debian kernels ship modules xz-compressed; busybox's insmod wants them plain)
        case $ko in
        *.ko.xz) xz -dc "$root$ko" >"$init${ko%.xz}" && ko=${ko%.xz} ;;
        *) cp "$root$ko" "$init$ko" ;;
        esac
        echo "$ko" >>"$init/modules.order"
    done
(cd "$init" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

# Root tweaks: a name, no fstab, no apt caches; the scenario disk's guest-init.sh does the rest.
echo guest >"$root/etc/hostname"
printf '127.0.0.1 localhost guest\n::1 localhost\n' >"$root/etc/hosts"
: >"$root/etc/fstab"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root/debootstrap"
mkdir -p "$root/scenario" "$root/srv"
cp "$here/packages.txt" "$work/packages.txt"
echo "$kver" >"$work/kernel-version"

# Free space for the workload (64 MiB files, fio, a tar tree); the image is sparse on the host.
used=$(du -sm "$root" | cut -f1)
size=$((used + 2048))
log "rootfs.ext4: ${used} MiB used, ${size} MiB image"
mkfs.ext4 -q -F -L pnfs-guest -d "$root" "$work/rootfs.ext4" "${size}M" >/dev/null
rm -rf "$root" "$work/kernel" "$work/initramfs"
touch "$work/ready"

# Swap in the new guest; guests built from other package lists are stale.
if [[ -z $kernel_deb ]]; then
    for old in "$base"/guest-*; do
        if [[ -d $old && $old != "$work" ]]; then rm -rf "$old"; fi
    done
fi
mv "$work" "$dir"
log "guest ready in $(($(date +%s) - start)) s: $dir"
echo "$dir"
