# Sourced by bin/agentd, `npm start` and the bench before they start the
# daemon: glibc malloc settings made for it. glibc reads them only when a
# process starts, so the daemon cannot set them for itself.
#
# Why (docs/operations.md, "The malloc settings"): by default, once a thread frees a
# big block glibc raises its threshold for handing memory back to the system,
# and every thread allocates from its own arena, so the 16 MiB copies of one
# big request stayed in the process after the turn and the next big block was
# taken fresh beside them. A fixed threshold sends blocks over 128 KiB straight
# back when freed; no more arenas than cores lets threads reuse each other's
# free memory, and at most that many threads run at once anyway.
#
# An operator's own setting wins: when GLIBC_TUNABLES names any glibc.malloc
# tunable, or MALLOC_ARENA_MAX or MALLOC_MMAP_THRESHOLD_ is set, nothing is
# added. Other systems (musl, macOS) ignore these names.
case "${GLIBC_TUNABLES-}" in
  *glibc.malloc.*) ;;
  *)
    if [ "$(uname -s 2>/dev/null)" = Linux ] && [ -z "${MALLOC_ARENA_MAX-}${MALLOC_MMAP_THRESHOLD_-}" ]; then
      GLIBC_TUNABLES="glibc.malloc.mmap_threshold=131072:glibc.malloc.arena_max=$(nproc 2>/dev/null || echo 8)${GLIBC_TUNABLES:+:$GLIBC_TUNABLES}"
      export GLIBC_TUNABLES
    fi
    ;;
esac
