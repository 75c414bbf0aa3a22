#!/usr/bin/env bash
# Under --config=tsan: the guarded hand-off is silent, the unguarded counter is reported.
# In other builds there is nothing to check (says so and passes).
set -u
probe="$1"
out=$("$probe" 2>&1); rc=$?
if ! grep -q '^tsan$' <<<"$out"; then echo "not a TSan build: nothing to check"; exit 0; fi
if [[ $rc -ne 0 ]] || grep -q "ThreadSanitizer" <<<"$out"; then
  echo "FAIL: TSan reported the mutex-guarded hand-off (annotations not applied?)"; echo "$out"
  exit 1
fi
out=$("$probe" --race 2>&1); rc=$?
if [[ $rc -eq 0 ]] || ! grep -q "WARNING: ThreadSanitizer: data race" <<<"$out"; then
  echo "FAIL: TSan missed the unguarded counter (annotations hide races?)"; echo "$out"
  exit 1
fi
echo "ok: guarded hand-off silent, unguarded counter reported"
